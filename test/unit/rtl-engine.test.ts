/**
 * The RTL queue engine (qemu/erdma/rtl, verilated) against the TypeScript reference engine
 * (qemu/erdma/queue-engine.ts) on the same inputs: every request alone (CQEs across ring passes and
 * the 32-bit index wrap, flush limits of every mode, flush steps of multi-block SQEs across the
 * ring's end), then the device model with each engine behind the driver double, through a flush
 * that crosses the ring's end and a REFLUSH. The planted bugs (RTL parameters) differ from the
 * reference where they should, and the oracle catches each: rule 5 (each WR completes once) the
 * owner bit and the skipped flush, rule 4 (posting order) a flush completion that overtakes an
 * earlier WQE's success still on its way to the CQ.
 */
import t from "tap";
import { setupPackages } from "../../harness/setup.ts";
import { parseServerArgs } from "../../qemu/device-server/main.ts";
import { profileReflush } from "../../qemu/erdma/index.ts";
import { type QueueEngine, tsQueueEngine } from "../../qemu/erdma/queue-engine.ts";
import {
  ensureRtlEngine,
  RTL_HOST_PACKAGES,
  type RtlBug,
  verilatorVersion,
} from "../../qemu/erdma/rtl/build.ts";
import { loadRtlEngine } from "../../qemu/erdma/rtl/engine.ts";
import { pairWithBuffers } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";
import { Syndrome as S } from "../doubles/erdma-sqe.ts";
import { FLUSH, SUCCESS, TraceBuilder, verdictOf } from "../support/oracle-trace.ts";

const engines = new Map<string, QueueEngine>();
async function rtlEngine(bugs: RtlBug[] = []): Promise<QueueEngine> {
  const key = bugs.join(",");
  let engine = engines.get(key);
  if (!engine) {
    engine = loadRtlEngine(await ensureRtlEngine(bugs));
    engines.set(key, engine);
  }
  return engine;
}

/** A small deterministic generator (LCG), so a failure names inputs that can be replayed. */
function numbers(seed: number) {
  let x = seed >>> 0;
  return (below: number) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % below;
  };
}

t.test("CQEs: header with owner, slot and next producer index, as the reference says", async (t) => {
  const rtl = await rtlEngine();
  let checked = 0;
  let differ = 0;
  for (let log2 = 1; log2 <= 12; log2++) {
    const depth = 2 ** log2;
    const indexes = [...Array(3 * depth + 2).keys(), 0xffff_ffff - depth, 0xffff_fffe, 0xffff_ffff];
    for (const pi of indexes) {
      const header = (pi * 0x9e37_79b9) >>> 0;
      const a = rtl.cqe(pi, log2, header);
      const b = tsQueueEngine.cqe(pi, log2, header);
      checked++;
      if (a.header !== b.header || a.slot !== b.slot || a.nextPi !== b.nextPi) {
        differ++;
        if (differ < 5) t.fail(`pi ${pi} depth ${depth}: rtl ${JSON.stringify(a)}, ts ${JSON.stringify(b)}`);
      }
    }
  }
  t.equal(differ, 0, "no difference");
  t.ok(checked > 20000, `${checked} CQEs compared`);
  t.equal(rtl.cqe(4, 2, 0).header >>> 31, 0, "second pass of a 4-deep ring: owner 0");
  t.equal(rtl.cqe(8, 2, 0).header >>> 31, 1, "third pass: owner 1");
  t.equal(rtl.cqe(0xffff_ffff, 2, 0).nextPi, 0, "the producer index wraps at 32 bits");
});

t.test("flush limits: every mode, with and without an error index and a REFLUSH", async (t) => {
  const rtl = await rtlEngine();
  const next = numbers(0x5eed);
  const modes = ["stop", "reflush", "always"] as const;
  let differ = 0;
  for (let i = 0; i < 20000; i++) {
    const ci = next(0x10000);
    const near = () => (ci + next(64) - 16) & 0xffff;
    const input = {
      mode: modes[i % 3] ?? "stop",
      ci,
      pi: i % 7 === 0 ? next(0x10000) : near(),
      ...(i % 2 ? { errorPi: near() } : {}),
      ...(i % 5 < 2 ? { reflushPi: i % 11 === 0 ? next(0x10000) : near() } : {}),
    };
    const a = rtl.flushLimit(input);
    const b = tsQueueEngine.flushLimit(input);
    if (a.limit !== b.limit || a.reason !== b.reason) {
      differ++;
      if (differ < 5)
        t.fail(`differs on ${JSON.stringify(input)}: rtl ${JSON.stringify(a)}, ts ${JSON.stringify(b)}`);
    }
  }
  t.equal(differ, 0, "20000 inputs, no difference");
  t.same(tsQueueEngine.flushLimit({ mode: "reflush", pi: 3, ci: 10, errorPi: 9 }), {
    limit: 10,
    reason: "error",
  });
  t.same(
    rtl.flushLimit({ mode: "reflush", pi: 3, ci: 10, errorPi: 9 }),
    { limit: 10, reason: "error" },
    "behind ci: ci",
  );
});

t.test("flush steps: multi-block SQEs, limits that cut a WQE, the 16-bit index wrap", async (t) => {
  const rtl = await rtlEngine();
  const next = numbers(0xf1a5);
  let differ = 0;
  for (let i = 0; i < 20000; i++) {
    const log2 = 1 + next(16);
    const ci = i % 4 === 0 ? (0x10000 - next(8)) & 0xffff : next(0x10000);
    const limit = (ci + 1 + next(12)) & 0xffff;
    const wqebbs = 1 + next(8);
    const a = rtl.flushStep(ci, limit, wqebbs, log2);
    const b = tsQueueEngine.flushStep(ci, limit, wqebbs, log2);
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      differ++;
      if (differ < 5)
        t.fail(`differs on ${JSON.stringify({ ci, limit, wqebbs, log2 })}: ${JSON.stringify([a, b])}`);
    }
  }
  t.equal(differ, 0, "20000 steps, no difference");
  t.same(
    rtl.flushStep(0xfffe, 1, 4, 4),
    { next: 1, taken: 3, complete: true },
    "cut at the limit, across the wrap",
  );
});

t.test("the planted bugs differ from the reference exactly where they were planted", async (t) => {
  const owner = await rtlEngine(["owner-stuck"]);
  const skip = await rtlEngine(["flush-skip-wrap"]);
  for (let pi = 0; pi < 16; pi++) {
    const want = tsQueueEngine.cqe(pi, 2, 0);
    const got = owner.cqe(pi, 2, 0);
    if (pi >= 4 && pi < 8) t.equal(got.header >>> 31, 1, `pi ${pi}: the second pass keeps owner 1`);
    else t.strictSame(got, want, `pi ${pi}: as the reference`);
  }
  // a ring of 8: the WQE that reaches slot 7 is the last before the wrap
  t.same(skip.flushStep(5, 9, 1, 3), tsQueueEngine.flushStep(5, 9, 1, 3), "slot 5: flushed");
  t.same(skip.flushStep(6, 9, 2, 3), { next: 8, taken: 2, complete: false }, "slots 6-7: stepped over");
  t.same(skip.flushStep(8, 9, 1, 3), tsQueueEngine.flushStep(8, 9, 1, 3), "slot 0 of the next pass: flushed");
});

interface Run {
  /** the driver's work completions: wr id and status, in the order polled */
  wcs: [string, number][];
  /** the CQEs the device wrote: CQ index and owner */
  cqes: [number, number][];
  flushes: unknown[];
  posted: { wrId: number; phase: "rts" | "err" }[];
}

/**
 * SQ of 8 WQEBBs, CQ of 4: five WRITEs (2 WQEBBs each) complete, the SQ and the CQ on their second
 * pass; then a SEND (slot 2), an inline SEND of 2 WQEBBs (slots 3-4) and a SEND (slot 5) wait for an
 * RQE the peer never posts; ERROR flushes them; a WRITE posted in ERROR (slots 6-7, the last WQE
 * before the ring wraps) is flushed by the REFLUSH that names it.
 */
async function flushAcrossTheWrap(engine: QueueEngine): Promise<Run> {
  const { p, src, dst } = await pairWithBuffers({
    profile: { ...profileReflush, recvNotPosted: "wait" },
    engine,
    cqDepth: 4,
    maxSendWr: 2,
  });
  const posted: Run["posted"] = [];
  const wcs: Run["wcs"] = [];
  const poll = () => {
    for (const w of p.a.drv.pollWc(p.a.scq)) wcs.push([String(w.wrId), w.status]);
  };
  const write = (wrId: number) => {
    posted.push({ wrId, phase: "rts" });
    p.a.drv.postSend(p.a.qp, {
      opcode: "WRITE",
      wrId: BigInt(wrId),
      signaled: true,
      remoteAddr: dst.va,
      rkey: dst.stag,
      sgl: [src.sge(0, 8)],
    });
  };
  for (const batch of [
    [1, 2, 3],
    [4, 5],
  ]) {
    for (const id of batch) write(id);
    await p.settle();
    poll();
  }
  const sends = [
    { opcode: "SEND" as const, wrId: 6n, signaled: true, sgl: [src.sge(0, 8)] },
    { opcode: "SEND" as const, wrId: 7n, signaled: true, inline: [new Uint8Array(40).fill(7)] },
    { opcode: "SEND" as const, wrId: 8n, signaled: true, sgl: [src.sge(0, 8)] },
  ];
  for (const s of sends) {
    posted.push({ wrId: Number(s.wrId), phase: "rts" });
    p.a.drv.postSend(p.a.qp, s);
  }
  await p.settle();
  poll();
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR, undefined, { reflush: false });
  await p.settle();
  poll();
  posted.push({ wrId: 9, phase: "err" });
  p.a.drv.postSend(p.a.qp, {
    opcode: "WRITE",
    wrId: 9n,
    signaled: true,
    remoteAddr: dst.va,
    rkey: dst.stag,
    sgl: [src.sge(0, 8)],
  });
  await p.a.drv.flushWorker(p.a.qp);
  await p.settle();
  poll();
  const cqes = p.a.host
    .ofKind("cqe")
    .filter((e) => e.cq === p.a.scq.cqn)
    .map((e) => [Number(e.index), Number(e.owner)] as [number, number]);
  // the flush events without their time stamps
  const flushes = p.a.host.ofKind("flush").map(({ t: _t, ...rest }) => rest);
  return { wcs, cqes, flushes, posted };
}

/** Rule 5 of the oracle (each WR completes once, on its CQ, once the QP is in ERR) over a run. */
function rule5(run: Run) {
  const b = new TraceBuilder().qp("qp", { qpNum: 1 });
  for (const w of run.posted.filter((w) => w.phase === "rts")) b.post("qp", "sq", w.wrId, 1);
  b.modify("qp", "ERR");
  for (const w of run.posted.filter((w) => w.phase === "err")) b.post("qp", "sq", w.wrId, 1);
  for (const [wrId, status] of run.wcs) {
    b.cqe("qp", "sq", Number(wrId), {
      status: status === S.SUCCESS ? SUCCESS : FLUSH,
      opcode: Number(wrId) >= 6 && Number(wrId) <= 8 ? "send" : "write",
    });
  }
  return verdictOf(b, "5", "ib");
}

t.test("the device with each engine: the same completions, CQEs and flushes", async (t) => {
  const ts = await flushAcrossTheWrap(tsQueueEngine);
  const rtl = await flushAcrossTheWrap(await rtlEngine());
  t.same(
    ts.wcs,
    [
      ["1", S.SUCCESS],
      ["2", S.SUCCESS],
      ["3", S.SUCCESS],
      ["4", S.SUCCESS],
      ["5", S.SUCCESS],
      ["6", S.FLUSH_ERR],
      ["7", S.FLUSH_ERR],
      ["8", S.FLUSH_ERR],
      ["9", S.FLUSH_ERR],
    ],
    "the reference: five successes, then every WR flushed in order (9 by the REFLUSH)",
  );
  t.ok(
    ts.cqes.some(([index, owner]) => index >= 4 && owner === 0),
    "the CQ went round: owner 0 on its second pass",
  );
  t.strictSame(rtl.wcs, ts.wcs, "RTL: the same work completions");
  t.strictSame(rtl.cqes, ts.cqes, "RTL: the same CQEs (index, owner)");
  t.strictSame(rtl.flushes, ts.flushes, "RTL: the same flush events (limits, WQEs, blocks)");
  t.equal(rule5(ts).verdict, "PASS", "rule 5 holds on the reference");
  t.equal(rule5(rtl).verdict, "PASS", "rule 5 holds on the RTL");
});

for (const [bug, what] of [
  ["flush-skip-wrap", "the WRITE in slots 6-7 (WR 9, the last before the wrap) gets no flush completion"],
  ["owner-stuck", "the CQEs of the CQ's second pass keep owner 1: the driver never sees them"],
] as const) {
  t.test(`planted bug ${bug}: ${what}; the oracle's rule 5 FAILs`, async (t) => {
    const run = await flushAcrossTheWrap(await rtlEngine([bug]));
    const ids = run.wcs.map(([id]) => id);
    if (bug === "flush-skip-wrap") {
      t.same(ids, ["1", "2", "3", "4", "5", "6", "7", "8"], "WR 9 missing, the others flushed");
      t.match(
        run.flushes.at(-1),
        { wqes: [], skipped: { wqes: [14], origin: "erdma_flush_step.complete" } },
        "the flush event names WQE 14 (WR 9, slots 6-7 of the second pass) and the RTL signal that withheld its completion",
      );
    } else {
      t.same(ids, ["1", "2", "3", "4"], "the driver stops at the first CQE of the second pass");
      t.ok(
        run.cqes.some(([index, owner]) => index === 4 && owner === 1),
        "CQE 4 written with owner 1",
      );
    }
    const v = rule5(run);
    t.equal(v.verdict, "FAIL", "rule 5 FAILs");
    t.match(JSON.stringify(v), bug === "flush-skip-wrap" ? /WR 9\b/ : /WR 5\b/, "naming the WR it lost");
  });
}

t.test("flush steps with a completion pending: the RTL holds where the reference holds", async (t) => {
  const rtl = await rtlEngine();
  const next = numbers(0x0bde);
  let differ = 0;
  let held = 0;
  for (let i = 0; i < 5000; i++) {
    const log2 = 1 + next(16);
    const ci = next(0x10000);
    const limit = (ci + next(6)) & 0xffff;
    const wqebbs = 1 + next(4);
    const pending = i % 2 === 0;
    const a = rtl.flushStep(ci, limit, wqebbs, log2, pending);
    const b = tsQueueEngine.flushStep(ci, limit, wqebbs, log2, pending);
    if (b.hold) held++;
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      differ++;
      if (differ < 5)
        t.fail(
          `differs on ${JSON.stringify({ ci, limit, wqebbs, log2, pending })}: ${JSON.stringify([a, b])}`,
        );
    }
  }
  t.equal(differ, 0, "5000 steps, no difference");
  t.ok(held > 1000, `${held} of them held`);
  t.same(rtl.flushStep(3, 5, 1, 3, true), { next: 3, taken: 0, complete: false, hold: true }, "held at ci");
  t.same(rtl.flushStep(5, 5, 1, 3, true), { next: 5, taken: 0, complete: false }, "nothing left: no hold");
  const bug = await rtlEngine(["flush-before-success"]);
  t.same(
    bug.flushStep(3, 5, 1, 3, true),
    { next: 4, taken: 1, complete: true },
    "flush-before-success: the step ignores the pending completion",
  );
  t.same(
    bug.flushStep(3, 5, 1, 3, false),
    rtl.flushStep(3, 5, 1, 3, false),
    "as designed when none is pending",
  );
  t.equal(rtl.origins.flushComplete, "erdma_flush_step.complete", "the RTL names its signals");
  t.equal(rtl.origins.flushHold, "erdma_flush_step.hold");
});

/**
 * A WRITE's success completion held on its way to the CQ (delay-cqe, 60 ms) while the QP moves to
 * ERROR and a WRITE posted in ERROR is flushed by the REFLUSH that names it.
 */
async function flushBehindPendingSuccess(
  engine: QueueEngine,
  delay: { ms: number; until?: "flush" } = { ms: 60 },
) {
  const { p, src, dst } = await pairWithBuffers({ profile: profileReflush, engine });
  const write = (wrId: bigint) => ({
    opcode: "WRITE" as const,
    wrId,
    signaled: true,
    remoteAddr: dst.va,
    rkey: dst.stag,
    sgl: [src.sge(0, 8)],
  });
  const wcs: [string, number][] = [];
  const poll = () => {
    for (const w of p.a.drv.pollWc(p.a.scq)) wcs.push([String(w.wrId), w.status]);
  };
  p.a.dev.faults.add({ kind: "delay-cqe", ...delay });
  p.a.drv.postSend(p.a.qp, write(1n));
  await p.settle();
  poll();
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR, undefined, { reflush: false });
  p.a.drv.postSend(p.a.qp, write(2n));
  await p.a.drv.flushWorker(p.a.qp);
  await p.settle();
  poll();
  const early = [...wcs];
  const owedEarly = p.a.dev.faults.timers().map((w) => w.what);
  if (delay.until === undefined) await new Promise((r) => setTimeout(r, 150));
  await p.settle();
  poll();
  const b = new TraceBuilder().qp("qp", { qpNum: 1 });
  b.post("qp", "sq", 1, 1).modify("qp", "ERR").post("qp", "sq", 2, 1);
  for (const [wrId, status] of wcs)
    b.cqe("qp", "sq", Number(wrId), { status: status === S.SUCCESS ? SUCCESS : FLUSH, opcode: "write" });
  return {
    early,
    owedEarly,
    wcs,
    rule4: verdictOf(b, "4", "ib"),
    flushes: p.a.host.ofKind("flush").filter((e) => e.queue === "sq"),
    waits: p.a.host.ofKind("wait").filter((e) => e.queue === "sq"),
  };
}

t.test("a flush holds behind a success completion still on its way, on each engine", async (t) => {
  for (const engine of [tsQueueEngine, await rtlEngine()]) {
    const run = await flushBehindPendingSuccess(engine);
    t.same(run.early, [], `${engine.name}: nothing polled while WRITE 1's completion is held`);
    t.same(
      run.wcs,
      [
        ["1", S.SUCCESS],
        ["2", S.FLUSH_ERR],
      ],
      `${engine.name}: the success, then the flush`,
    );
    t.equal(run.rule4.verdict, "PASS", `${engine.name}: rule 4 holds`);
    t.match(
      run.waits,
      [
        {
          index: 2,
          reason: new RegExp(`flush held \\(${engine.origins.flushHold.replace(/[().]/g, "\\$&")}\\)`),
        },
      ],
      `${engine.name}: the trace says the flush of WRITE 2 (WQE 2: WRITE 1 took blocks 0-1) was held`,
    );
    t.notOk(
      run.flushes.some((f) => f.overtook),
      `${engine.name}: no flush completion overtook a pending one`,
    );
  }
});

t.test(
  "delay-cqe until: flush: the held success is written once the flush reaches it, not after its ms",
  async (t) => {
    for (const engine of [tsQueueEngine, await rtlEngine()]) {
      const run = await flushBehindPendingSuccess(engine, { ms: 60_000, until: "flush" });
      const inOrder = [
        ["1", S.SUCCESS],
        ["2", S.FLUSH_ERR],
      ];
      t.same(run.early, inOrder, `${engine.name}: both there as soon as the flush of WRITE 2 was held`);
      t.same(run.owedEarly, [], `${engine.name}: the device owes no timer any more`);
      t.equal(run.waits.length, 1, `${engine.name}: the flush was held once first`);
      t.equal(run.rule4.verdict, "PASS", `${engine.name}: rule 4 holds`);
    }
    const bug = await flushBehindPendingSuccess(await rtlEngine(["flush-before-success"]), {
      ms: 60_000,
      until: "flush",
    });
    t.same(
      bug.early,
      [
        ["2", S.FLUSH_ERR],
        ["1", S.SUCCESS],
      ],
      "flush-before-success: the overtaking flush completion, then the success it released",
    );
    t.equal(bug.rule4.verdict, "FAIL", "flush-before-success: rule 4 still FAILs");
  },
);

t.test(
  "planted bug flush-before-success: the flush overtakes the pending success; rule 4 FAILs",
  async (t) => {
    const run = await flushBehindPendingSuccess(await rtlEngine(["flush-before-success"]));
    t.same(run.early, [["2", S.FLUSH_ERR]], "WR 2's flush completion is there first");
    t.same(
      run.wcs,
      [
        ["2", S.FLUSH_ERR],
        ["1", S.SUCCESS],
      ],
      "then WR 1's success",
    );
    t.equal(run.rule4.verdict, "FAIL", "rule 4 FAILs");
    t.match(JSON.stringify(run.rule4), /WR 1\b.*completed after.*WR 2\b/, "naming the WRs out of order");
    t.same(run.waits, [], "no flush was held");
    t.match(
      run.flushes.find((f) => f.overtook),
      { wqes: [2], overtook: { wqes: [2], pending: [0], origin: "erdma_flush_step.complete" } },
      "the flush event names the RTL signal that granted the overtaking completion",
    );
  },
);

t.test("hil setup installs Verilator and yosys; without Verilator, one line names hil setup", async (t) => {
  for (const name of ["verilator", "yosys"]) {
    t.ok(RTL_HOST_PACKAGES.includes(name as (typeof RTL_HOST_PACKAGES)[number]), `${name} is an RTL package`);
    t.ok(setupPackages().includes(name), `hil setup installs ${name} by default`);
  }
  const path = process.env.PATH;
  process.env.PATH = t.testdir({});
  t.teardown(() => {
    process.env.PATH = path;
  });
  await t.rejects(verilatorVersion(), {
    name: "HilError",
    message: "verilator is not installed: run `hil setup` (it installs Debian's verilator and yosys)",
    where: "--device-rtl",
  });
});

t.test("the device server takes --queue-engine for erdma only", async (t) => {
  const plan = parseServerArgs([
    "--device",
    "erdma",
    "--socket-path",
    "/tmp/x.sock",
    "--mac",
    "52:54:00:12:34:56",
    "--queue-engine",
    "/lib/q.so",
  ]);
  t.equal(plan?.queueEngine, "/lib/q.so");
  t.throws(() => parseServerArgs(["--socket-path", "/tmp/x.sock", "--queue-engine", "/lib/q.so"]), {
    message: "--queue-engine belongs to --device erdma",
  });
});
