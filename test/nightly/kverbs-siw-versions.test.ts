// The in-kernel verbs executor's cases (test/support/kverbs-siw-cases.ts) on Linux 6.1 and 7.2,
// whose siw differ from 6.12's (6.1's answers ib_query_qp without the QP's state).
import t from "tap";
import { kverbsOnSiw } from "../support/kverbs-siw-cases.ts";

t.setTimeout(60 * 60 * 1000);

kverbsOnSiw(["debian:6.1", "debian:7.2"]);
