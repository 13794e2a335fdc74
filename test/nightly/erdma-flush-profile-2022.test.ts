// The QP in ERROR on the emulated erdma (test/support/erdma-flush-profile-cases.ts), erdma-2022
// hardware with Linux 6.1's driver: only what was outstanding at the error flushes, the WRs posted
// in ERROR never complete, and ib_drain_qp does not return.
import t from "tap";
import { flushProfileCases } from "../support/erdma-flush-profile-cases.ts";

t.setTimeout(40 * 60 * 1000);

flushProfileCases([{ base: "debian:6.1", profile: "erdma-2022", flushesPostsInError: false }]);
