// The in-kernel verbs executor (guest/kverbs, hil_kverbs.ko) in a real debian:6.12 guest on
// soft-iWARP: the cases are test/support/kverbs-siw-cases.ts. Linux 6.1 and 7.2 run them in the
// nightly tier (test/nightly/kverbs-siw-versions.test.ts); HIL_KVERBS_KERNELS (comma-separated
// bases) runs them here on others.
import t from "tap";
import { kverbsOnSiw } from "../support/kverbs-siw-cases.ts";

t.setTimeout(60 * 60 * 1000);

kverbsOnSiw((process.env.HIL_KVERBS_KERNELS ?? "debian:6.12").split(",").filter(Boolean));
