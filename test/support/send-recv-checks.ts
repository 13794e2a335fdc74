import type { Test } from "tap";
import { type CqeRecord, payloadSum, WC_SUCCESS } from "../../harness/protocol/trace.ts";

/**
 * The siw traffic step both executors run (8 receives wr_id 100.., 8 SENDs wr_id 1.. of 256 bytes):
 * the receives complete in posting order, all RECV SUCCESS of 256 bytes, each holding the payload
 * of the SEND with the same index.
 */
export function checkEightSendsReceived(t: Test, recvs: readonly CqeRecord[]): void {
  t.same(
    recvs.map((c) => c.wr_id),
    [100, 101, 102, 103, 104, 105, 106, 107],
    "receives complete in posting order",
  );
  t.ok(
    recvs.every((c) => c.status === WC_SUCCESS && c.opcode_name === "RECV" && c.byte_len === 256),
    "all RECV SUCCESS, 256 bytes",
  );
  t.same(
    recvs.map((c) => c.sum),
    [1, 2, 3, 4, 5, 6, 7, 8].map((wrId) => payloadSum(wrId, 256)),
    "each receive holds the payload of the SEND with the same index",
  );
}

/**
 * The SQ completions of fixtures/scenarios/fault-error-wqe.yaml on erdma, as `wr_id status_name`,
 * whichever executor posts: WR 1003 fails with the armed status (erdma's invalid-STag SQE error,
 * LOC_ACCESS_ERR to the driver) and the WRs after it are flushed in order.
 */
export const ERROR_WQE_SQ_COMPLETIONS = [
  "1000 SUCCESS",
  "1001 SUCCESS",
  "1002 SUCCESS",
  "1003 LOC_ACCESS_ERR",
  "1004 WR_FLUSH_ERR",
  "1005 WR_FLUSH_ERR",
  "1006 WR_FLUSH_ERR",
  "1007 WR_FLUSH_ERR",
];
