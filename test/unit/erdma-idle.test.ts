// The device's idle report (qemu/erdma/idle.ts): how long it has been quiet and what it still owes
// by itself. Faults with a timer (a delayed CQE, a held interrupt, a stall with ms) are owed until
// they fire; a stall without an end, or one that waits for the ERR transition, is not (only the
// guest or the harness can end it); work queued on the device is owed until it ran. The control
// channel's "idle" answers for one device or for all of a server's together.
import t from "tap";
import { type ControlledDevice, handleControl } from "../../qemu/erdma/control.ts";
import { FaultPlan } from "../../qemu/erdma/faults.ts";
import {
  ActivityClock,
  combinedIdle,
  heldWork,
  type IdleReport,
  idleReport,
  TIMER_GRACE_MS,
} from "../../qemu/erdma/idle.ts";
import { Tracer } from "../../qemu/erdma/trace.ts";
import { writePair } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test("the activity clock: quiet since the last touch", async (t) => {
  let now = 1000;
  const clock = new ActivityClock(() => now);
  now = 1400;
  t.equal(clock.quietMs, 400);
  clock.touch();
  t.equal(clock.quietMs, 0);
  now = 1450;
  t.same(idleReport(clock, 0, [], [], now), { quietMs: 50, owed: [], held: [] });
});

t.test("owed: jobs queued or running, timers until their time and a grace after it", async (t) => {
  const clock = new ActivityClock(() => 0);
  t.match(idleReport(clock, 2, [], [], 0).owed, [/2 deferred job/]);
  const timers = [{ what: "delay-cqe (fault 1) fires", until: 500 }];
  t.match(idleReport(clock, 0, timers, [], 100).owed, [/delay-cqe \(fault 1\) fires in 400 ms/]);
  t.equal(
    idleReport(clock, 0, timers, [], 500 + TIMER_GRACE_MS - 1).owed.length,
    1,
    "just past its time: still owed",
  );
  t.same(idleReport(clock, 0, timers, [], 500 + TIMER_GRACE_MS).owed, [], "its work has had time to show");
});

t.test("several devices: the least quiet, what any owes, named", async (t) => {
  const r = combinedIdle(
    new Map<string, IdleReport>([
      ["erdma0", { quietMs: 900, owed: [], held: ["QP 2 sq: 1 WQE block(s) in ERROR, not flushed"] }],
      ["erdma1", { quietMs: 30, owed: ["1 deferred job(s) queued or running"], held: [] }],
    ]),
  );
  t.same(r, {
    quietMs: 30,
    owed: ["erdma1: 1 deferred job(s) queued or running"],
    held: ["erdma0: QP 2 sq: 1 WQE block(s) in ERROR, not flushed"],
  });
});

function plan(): FaultPlan {
  return new FaultPlan(
    new Tracer(
      () => {},
      () => 0,
      "erdma0",
    ),
  );
}

t.test("the fault plan's timers: fired faults with a time, not armed ones nor endless stalls", async (t) => {
  const p = plan();
  p.add({ kind: "delay-cqe", ms: 300 });
  p.add({ kind: "coalesce-irq", ms: 200 });
  p.add({ kind: "stall-queue", queue: "sq", qpn: 1, ms: 400 });
  p.add({ kind: "stall-queue", queue: "rq", qpn: 1 });
  p.add({ kind: "stall-queue", queue: "sq", qpn: 2, until: "error" });
  t.same(p.timers(), [], "armed, not fired: nothing set yet");
  const t0 = Date.now();
  t.ok(p.fire("delay-cqe", { qpn: 1, queue: "sq" }));
  t.ok(p.fire("coalesce-irq", { vector: 1 }));
  t.ok(p.fire("stall-queue", { qpn: 1, queue: "sq" }));
  t.ok(p.fire("stall-queue", { qpn: 1, queue: "rq" }));
  t.ok(p.fire("stall-queue", { qpn: 2, queue: "sq" }));
  const timers = p.timers();
  t.match(
    timers.map((x) => x.what),
    [/delay-cqe \(fault 1\)/, /coalesce-irq \(fault 2\)/, /the stall of 1\/sq ends/],
    "the stall without an end and the one until ERROR owe nothing by themselves",
  );
  for (const [i, ms] of [300, 200, 400].entries()) {
    const until = timers[i]?.until ?? 0;
    t.ok(until >= t0 + ms && until <= Date.now() + ms, `timer ${i} at its ms`);
  }
  p.clear();
  t.same(
    p.timers().map((x) => x.what),
    timers.slice(0, 2).map((x) => x.what),
    "a clear ends the stalls; the timers already set still fire",
  );
  t.same(p.timers(Date.now() + 400 + TIMER_GRACE_MS + 1), [], "all past");
});

/** A connected loopback pair on the real device model, with WRITEs to post. */
async function writes() {
  const { p, w } = await writePair(true);
  const report = () =>
    idleReport(
      new ActivityClock(),
      p.a.dev.pendingJobs,
      p.a.dev.faults.timers(),
      heldWork(p.a.dev.state.qps.values(), (qpn, queue) => p.a.dev.faults.stalled(qpn, queue) !== undefined),
    );
  return { p, w, report };
}

t.test("the device model: a doorbell's work is owed until it ran, then nothing", async (t) => {
  const { p, w, report } = await writes();
  await p.settle();
  t.same(report().owed, [], "settled: nothing owed");
  t.same(report().held, [], "nothing held");
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  t.match(report().owed, [/deferred job/], "the doorbell's work is queued");
  await p.settle();
  t.same(report().owed, []);
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n, status: 0 }]);
});

t.test("the device model: a delayed CQE is owed until written", async (t) => {
  const { p, w, report } = await writes();
  p.a.dev.faults.add({ kind: "delay-cqe", ms: 150 });
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.same(p.a.drv.pollWc(p.a.scq), [], "not written yet");
  t.match(report().owed, [/delay-cqe/], "the device still owes it");
  await sleep(150 + TIMER_GRACE_MS + 20);
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 1n }], "written");
  t.same(report().owed, []);
});

t.test("the device model: a stall with ms is owed, a stall without an end is not", async (t) => {
  const timed = await writes();
  timed.p.a.dev.faults.add({ kind: "stall-queue", queue: "sq", qpn: timed.p.a.qp.qpn, ms: 150 });
  timed.p.a.drv.postSend(timed.p.a.qp, [timed.w(1n)]);
  await timed.p.settle();
  t.same(timed.p.a.drv.pollWc(timed.p.a.scq), [], "stalled");
  t.match(timed.report().owed, [/the stall of \d+\/sq ends/], "its end is owed: not idle");
  t.equal(timed.report().held.length, 1, "held meanwhile");
  await sleep(150 + TIMER_GRACE_MS + 20);
  await timed.p.settle();
  t.match(timed.p.a.drv.pollWc(timed.p.a.scq), [{ wrId: 1n }], "executed when the stall ended");

  const endless = await writes();
  endless.p.a.dev.faults.add({ kind: "stall-queue", queue: "sq", qpn: endless.p.a.qp.qpn });
  endless.p.a.drv.postSend(endless.p.a.qp, [endless.w(1n)]);
  await endless.p.settle();
  await sleep(50);
  t.same(endless.p.a.drv.pollWc(endless.p.a.scq), [], "stalled");
  t.same(endless.report().owed, [], "the WQE is outstanding, but the device will not touch it by itself");
  t.match(endless.report().held, [/QP \d+ sq: \d+ WQE block\(s\) on a stalled queue/], "and holds it");
});

function controlled(report: IdleReport | undefined): ControlledDevice {
  return {
    faults: plan(),
    snapshot: () => ({}),
    ...(report ? { idle: () => report } : {}),
  };
}

t.test('the control channel: "idle" of one device, of all, and of a device that cannot tell', async (t) => {
  const a = { quietMs: 700, owed: [], held: [] };
  const b = { quietMs: 20, owed: ["1 deferred job(s) queued or running"], held: [] };
  const two = new Map([
    ["erdma0", controlled(a)],
    ["erdma1", controlled(b)],
  ]);
  t.same(handleControl(two, '{"op":"idle","device":"erdma0"}'), { ok: true, idle: a });
  t.same(handleControl(two, '{"op":"idle"}'), {
    ok: true,
    idle: combinedIdle(
      new Map([
        ["erdma0", a],
        ["erdma1", b],
      ]),
    ),
  });
  const mute = new Map([["erdma0", controlled(undefined)]]);
  t.match(handleControl(mute, '{"op":"idle"}'), { ok: false, error: /cannot tell whether it is idle/ });
  t.match(handleControl(mute, '{"op":"idle","device":"erdma0"}'), { ok: false, error: /cannot tell/ });
  t.match(handleControl(new Map(), '{"op":"idle"}'), { ok: false, error: /no device/ });
});

t.test("the device model: a WQE posted in ERROR after the last REFLUSH is held", async (t) => {
  const { p, w, report } = await writes();
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
  await p.settle();
  t.same(report().held, [], "everything the REFLUSH named was flushed");
  p.a.drv.postSend(p.a.qp, [w(9n)]);
  await p.settle();
  t.match(report().held, [/QP \d+ sq: \d+ WQE block\(s\) in ERROR, not flushed/], "the marker-like WQE");
  t.same(report().owed, [], "and nothing the device will do about it by itself");
  await p.a.drv.flushWorker(p.a.qp);
  await p.settle();
  t.same(report().held, [], "a REFLUSH naming it flushes it");
});
