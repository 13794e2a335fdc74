// User QPs on the emulated erdma, run by hil-uverbs: rdma-core's erdma provider writes the
// SQEs/RQEs and rings the doorbells itself, so the kernel driver is not on the post path. Data moves
// (SEND/RECV payloads, WRITE) and what was outstanding at the ERROR transition is flushed in order.
// Posting in ERROR, though, fails at once: rdma-core's erdma_post_send/erdma_post_recv return -EIO
// when the QP is in IBV_QPS_ERR (providers/erdma/erdma_verbs.c; the check was defended in review by
// RDMAC verbs 6.2.4), so the device never sees those WRs and the user drain's marker post fails.
// That is the behaviour the iwarp-rdmac profile tolerates and the IB and Linux profiles do not.
import t from "tap";
import { prepareGuest } from "../../harness/boot.ts";
import { runUverbs, UVERBS_EXIT } from "../../harness/executor/uverbs-driver.ts";
import {
  completionsOf,
  payloadSum,
  postedWrs,
  recordsOf,
  WC_SUCCESS,
  WC_WR_FLUSH_ERR,
} from "../../harness/protocol/trace.ts";
import { bootForTest } from "../support/guest.ts";

t.setTimeout(15 * 60 * 1000);

const IP = "10.0.2.15";

const SCENARIO = [
  `device addr=${IP}`,
  "pd name=pd0 rkey=global",
  "cq name=cqa depth=256",
  "cq name=cqb depth=256",
  `listen name=L addr=${IP} port=7473 qp=b pd=pd0 scq=cqb rcq=cqb sq=64 rq=64`,
  `connect name=a addr=${IP} port=7473 pd=pd0 scq=cqa rcq=cqa`,
  "post_recv qp=b wr_id=100 count=8",
  "post_send qp=a wr_id=1 count=8 len=256 signal=4",
  "poll cq=cqa min=2 timeout=10000",
  "poll cq=cqb min=8 timeout=10000",
  "post_send qp=a op=write wr_id=50 count=2 len=128",
  "poll cq=cqa min=2 timeout=10000",
  "post_recv qp=b wr_id=1000 count=6",
  "modify qp=b state=ERR",
  "poll cq=cqb min=6 timeout=10000",
  "post_recv qp=b wr_id=2000 count=3",
  "post_send qp=b wr_id=3000 count=2 signal=none",
  "poll cq=cqb min=5 timeout=3000",
  "drain qp=b which=sq",
];

for (const profile of ["erdma-reflush"]) {
  t.test(`hil-uverbs on the erdma model (${profile}), debian:6.12`, async (t) => {
    const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
    const guest = await bootForTest(t, prepared, { memoryMiB: 512, device: { profile } });
    const run = await runUverbs(guest, SCENARIO, { drainTimeoutMs: 3000, timeoutMs: 120_000, check: false });
    const { records } = run;
    t.equal(recordsOf(records, "device")[0]?.name, "erdma_0", "the address resolves to the erdma device");

    const recvs = completionsOf(records, "b", "rq").filter((c) => c.wr_id < 1000);
    t.same(
      recvs.map((c) => [c.wr_id, c.status, c.byte_len, c.sum]),
      [1, 2, 3, 4, 5, 6, 7, 8].map((i) => [99 + i, WC_SUCCESS, 256, payloadSum(i, 256)]),
      "SEND payloads land in the posted RECVs, in order",
    );
    t.same(
      completionsOf(records, "a", "sq").map((c) => [c.wr_id, c.status]),
      [
        [4, 0],
        [8, 0],
        [50, 0],
        [51, 0],
      ],
      "signaled SENDs and the WRITEs complete",
    );
    const flushedRq = completionsOf(records, "b", "rq").filter((c) => c.wr_id >= 1000);
    const flushedSq = completionsOf(records, "b", "sq");
    t.ok(
      [...flushedRq, ...flushedSq].every((c) => c.status === WC_WR_FLUSH_ERR),
      "flushes are WR_FLUSH_ERR",
    );
    t.same(
      flushedRq.map((c) => c.wr_id),
      [1000, 1001, 1002, 1003, 1004, 1005],
      "outstanding RECVs flushed, in order",
    );
    t.same(flushedSq, [], "nothing posted in ERROR reached the device");
    const inError = postedWrs(records).filter((w) => w.qp === "b" && (w.wrId >= 2000 || w.queue === "sq"));
    t.ok(inError.length > 0, "posts were attempted in ERROR");
    t.ok(
      inError.every((w) => w.rc !== 0 && !w.accepted),
      "the provider fails every post in ERROR immediately (-EIO), bad_wr = the first WR",
    );
    t.match(
      run.done.find((d) => d.op === "drain"),
      { rc: 5, err: /marker/ },
      "the user drain cannot post its marker",
    );
    t.equal(run.exitCode, UVERBS_EXIT.commandFailed, "hil-uverbs reports a failed command");
  });
}
