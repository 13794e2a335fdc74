// The QP in ERROR on the emulated erdma with Linux 6.12's driver, per behaviour profile
// (test/support/erdma-flush-profile-cases.ts): erdma-reflush and erdma-ib-compliant flush
// everything, in order, and ib_drain_qp returns. erdma-2022 with Linux 6.1's driver, where the
// drain hangs, is in the nightly tier (test/nightly/erdma-flush-profile-2022.test.ts).
import t from "tap";
import { flushProfileCases } from "../support/erdma-flush-profile-cases.ts";

t.setTimeout(40 * 60 * 1000);

flushProfileCases([
  { base: "debian:6.12", profile: "erdma-reflush", flushesPostsInError: true },
  { base: "debian:6.12", profile: "erdma-ib-compliant", flushesPostsInError: true },
]);
