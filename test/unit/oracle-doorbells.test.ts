// Checks (b) and (d) of rule hw-protocol on one doorbell (harness/oracle/hw-protocol/doorbells.ts),
// at their edges: an SQ/RQ producer index exactly a queue past the device's consumer index is fine,
// one more overwrites a WQE unread (unless a REFLUSH took the consumer index past it); a CQ
// doorbell's consumer index past the CQEs written is a problem unless those CQEs show as written
// right after it, and one more than the CQ's depth behind them is an overrun. Indexes wrap (16 bits
// for work queues, 24 for CQs).
import t from "tap";
import { ahead, cqDoorbell, workQueueDoorbell } from "../../harness/oracle/hw-protocol/doorbells.ts";
import type { ErdmaTraceEvent, ErdmaTraceEventOf } from "../../harness/protocol/hw-trace.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";

function ev<T extends ErdmaTraceEvent>(e: Record<string, unknown>, t = 5): T {
  return erdmaTraceEventSchema.parse({ t, dev: "erdma", ...e }) as T;
}
const wq = (
  db: "sq" | "rq",
  pi: unknown,
  ring: Record<string, number> | undefined,
  id: number | null = 3,
): ErdmaTraceEventOf<"doorbell"> =>
  ev({
    kind: "doorbell",
    db,
    value: "0x0",
    ...(id === null ? {} : { id }),
    detail: { pi },
    ...(ring ? { ring } : {}),
  });

t.test("ahead counts forward on a ring", (t) => {
  t.equal(ahead(5, 3, 16), 2);
  t.equal(ahead(3, 5, 16), 65534);
  t.equal(ahead(1, 65535, 16), 2, "across the wrap");
  t.equal(ahead(7, 7, 24), 0);
  t.end();
});

t.test(
  "(b) an SQ/RQ doorbell at most the queue's depth past the consumer index is fine; one more is not",
  (t) => {
    t.equal(workQueueDoorbell(wq("sq", 18, { depth: 8, ci: 10 })), undefined, "exactly a queue ahead");
    t.equal(
      workQueueDoorbell(wq("sq", 19, { depth: 8, ci: 10 })),
      "SQ doorbell of QP 3 moves the producer index to 19, 9 WQEBBs past the device's consumer index 10: the SQ holds 8, so 1 WQEBBs the device had not read were overwritten (t=5)",
    );
    t.equal(
      workQueueDoorbell(wq("rq", 4, { depth: 2, ci: 65535 })),
      "RQ doorbell of QP 3 moves the producer index to 4, 5 RQEs past the device's consumer index 65535: the RQ holds 2, so 3 RQEs the device had not read were overwritten (t=5)",
      "across the 16-bit wrap",
    );
    t.equal(workQueueDoorbell(wq("rq", 1, { depth: 2, ci: 65535 })), undefined);
    t.equal(
      workQueueDoorbell(wq("sq", 10, { depth: 8, ci: 18 })),
      undefined,
      "a consumer index a queue ahead (a REFLUSH took it there)",
    );
    t.match(
      workQueueDoorbell(wq("sq", 10, { depth: 8, ci: 19 })),
      /^SQ doorbell of QP 3 moves the producer index to 10, 65527 WQEBBs/,
      "more than a queue ahead: no REFLUSH explains it",
    );
    t.end();
  },
);

t.test(
  "(b) what cannot be judged is not judged: no producer index, no ring, no consumer index, no QP",
  (t) => {
    const over = { depth: 8, ci: 10 };
    t.equal(workQueueDoorbell(wq("sq", 30, over)) !== undefined, true, "the case judged");
    t.equal(workQueueDoorbell(wq("sq", undefined, over)), undefined);
    t.equal(workQueueDoorbell(wq("sq", "30", over)), undefined, "a producer index that is no number");
    t.equal(workQueueDoorbell(wq("sq", 30.5, over)), undefined, "nor an integer");
    t.equal(workQueueDoorbell(wq("sq", 30, undefined)), undefined);
    t.equal(workQueueDoorbell(wq("sq", 30, { depth: 8 })), undefined);
    t.equal(workQueueDoorbell(wq("sq", 30, over, null)), undefined);
    const { detail: _detail, ...noDetail } = wq("sq", 30, over);
    t.equal(workQueueDoorbell(noDetail), undefined);
    t.end();
  },
);

/** A CQ doorbell of CQ 2 reporting consumer index `ci` (the CI field), the device's producer index `pi`. */
const cqDb = (ci: number, pi: number | undefined, depth = 16, id: number | null = 2, t = 5) =>
  ev<ErdmaTraceEventOf<"doorbell">>(
    {
      kind: "doorbell",
      db: "cq",
      value: `0x${((BigInt(id ?? 0) << 32n) | BigInt(ci)).toString(16)}`,
      ...(id === null ? {} : { id }),
      ...(pi === undefined ? {} : { ring: { depth, pi } }),
    },
    t,
  );
const cqe = (cq: number, index: number, dev = "erdma") =>
  ev({ kind: "cqe", cq, index, owner: 1, qpn: 3, syndrome: 0, opcode: 0, dev }, 6);

t.test("(d) a CQ doorbell past the CQEs written, unless they show as written after it", (t) => {
  t.equal(cqDoorbell([cqDb(10, 10)], 0), undefined, "at the producer index");
  t.equal(
    cqDoorbell([cqDb(12, 10)], 0),
    "CQ doorbell of CQ 2 reports consumer index 12, 2 past the device's producer index 10: the driver cannot have read CQEs the device never wrote (t=5)",
  );
  t.equal(cqDoorbell([cqDb(12, 10), cqe(2, 10), cqe(2, 11)], 0), undefined, "CQEs 10 and 11 were in flight");
  t.ok(cqDoorbell([cqDb(12, 10), cqe(2, 10)], 0), "CQE 11 never shows");
  t.ok(cqDoorbell([cqDb(12, 10), cqe(2, 10), cqe(3, 11)], 0), "another CQ's CQE 11");
  t.ok(cqDoorbell([cqDb(12, 10), cqe(2, 10), cqe(2, 11, "erdma1")], 0), "another device's");
  t.ok(
    cqDoorbell([cqe(2, 10), cqe(2, 11), cqDb(12, 10)], 2),
    "CQEs before the doorbell are not written after it",
  );
  t.equal(
    cqDoorbell([cqDb(1, 2 ** 24 - 1), cqe(2, 2 ** 24 - 1), cqe(2, 2 ** 24)], 0),
    undefined,
    "across the 24-bit wrap",
  );
  t.equal(
    cqDoorbell([cqDb(12, 10 + 2 ** 24)], 0)?.startsWith(
      "CQ doorbell of CQ 2 reports consumer index 12, 2 past",
    ),
    true,
    "the producer index taken on 24 bits",
  );
  t.end();
});

t.test("(d) a CQ doorbell more than the CQ's depth behind the CQEs written: an overrun", (t) => {
  t.equal(cqDoorbell([cqDb(10, 26, 16)], 0), undefined, "exactly a CQ behind");
  t.equal(
    cqDoorbell([cqDb(10, 27, 16)], 0),
    "CQ 2 overrun: the device's producer index is 27 and the driver's consumer index (its arm doorbell) 10, so 1 CQE(s) were overwritten unread (the CQ holds 16; t=5)",
  );
  const halfway = cqDoorbell([cqDb(0, 2 ** 23, 16)], 0);
  t.match(halfway, /^CQ 2 overrun: /, "half the index space behind is behind, not ahead");
  t.match(
    cqDoorbell([cqDb(2 ** 23 + 1, 0, 16)], 0),
    /^CQ 2 overrun: /,
    "more than half the space ahead is behind",
  );
  t.match(
    cqDoorbell([cqDb(2 ** 23 - 1, 0, 16)], 0),
    /^CQ doorbell of CQ 2 reports consumer index 8388607/,
    "less than half ahead is ahead",
  );
  t.end();
});

t.test("(d) what is no CQ doorbell with a ring is not judged", (t) => {
  t.equal(cqDoorbell([cqDb(12, undefined)], 0), undefined, "no ring");
  t.equal(cqDoorbell([cqDb(12, 10, 16, null)], 0), undefined, "no CQ number");
  t.equal(cqDoorbell([{ ...cqDb(12, 10), db: "sq" } as ErdmaTraceEvent], 0), undefined, "an SQ doorbell");
  t.equal(cqDoorbell([cqe(2, 1)], 0), undefined, "no doorbell at all");
  t.equal(cqDoorbell([], 0), undefined, "nothing there");
  t.end();
});
