// Telling a hung drain before its watchdog (harness/suite/early-hang.ts), on a simulated clock: a
// drain is declared hung (its wait cut) only when the device has been quiet for the settle time
// with nothing owed, the executor is asleep in a drain for as long, and the device stayed quiet
// while the guest answered. Each case that must not be declared early is here: a timer the device
// still owes (a stall with ms, a delayed CQE), a REFLUSH the driver sends late, activity while the
// guest answers, a command that is not a drain, a drain that runs or has just started, a device
// that cannot tell.
import t from "tap";
import type { HangProbe, RunningCommand } from "../../harness/executor/executor.ts";
import {
  CONFIRM_MS,
  type EarlyHangDeps,
  quietFor,
  SETTLE_MS,
  waitsOnDevice,
  watchForHang,
} from "../../harness/suite/early-hang.ts";
import type { IdleReport } from "../../qemu/erdma/idle.ts";

/**
 * A simulated device and guest on a fake clock. `activity` lists the moments the device did
 * something; `owedUntil` a timer it holds; `command(now)` what the executor runs then.
 */
function sim(opts: {
  activity?: number[];
  owedUntil?: number;
  command: (now: number) => RunningCommand | undefined;
  /** how long the guest takes to answer (ms) */
  answerMs?: number;
  /** the device does something while the guest answers the nth question asked during a command (1-based) */
  activityDuringAnswer?: number;
  cannotTell?: boolean;
  /** the device holds no WQE it does not work on (the marker's CQE was written, or never reached it) */
  nothingHeld?: boolean;
  /** give up after this much simulated time */
  endMs?: number;
}) {
  let now = 0;
  const activity = [...(opts.activity ?? [0])];
  const cuts: Array<{ id: number; at: number }> = [];
  let questions = 0;
  /** the questions the guest answered with a running command */
  let busyQuestions = 0;
  const stops: Array<() => void> = [];
  const deps: EarlyHangDeps = {
    async idle(): Promise<IdleReport | undefined> {
      if (opts.cannotTell) return undefined;
      const last = Math.max(...activity.filter((a) => a <= now));
      const owed =
        opts.owedUntil !== undefined && now < opts.owedUntil ? ["the stall of 1/sq ends in some ms"] : [];
      const held = opts.nothingHeld ? [] : ["QP 2 sq: 1 WQE block(s) in ERROR, not flushed"];
      return { quietMs: now - last, owed, held };
    },
    probe: {
      async running() {
        questions++;
        const asked = now;
        now += opts.answerMs ?? 150;
        const command = opts.command(asked);
        if (command) busyQuestions++;
        if (opts.activityDuringAnswer === busyQuestions) activity.push(asked + 10);
        return command;
      },
      async cut(id) {
        cuts.push({ id, at: now });
      },
    } satisfies HangProbe,
    async sleep(ms) {
      now += ms;
      if (now > (opts.endMs ?? 12_000)) for (const s of stops) s();
    },
    now: () => now,
  };
  const watch = watchForHang(deps);
  stops.push(() => watch.stop());
  return { watch, cuts, questions: () => questions, now: () => now };
}

const drainFrom =
  (start: number, state = "D (disk sleep)") =>
  (now: number): RunningCommand | undefined =>
    now >= start ? { id: 7, op: "drain", ms: now - start, state } : undefined;

t.test(
  "a drain waiting on an idle device is declared hung after the settle time, not the watchdog",
  async (t) => {
    // the drain's last device activity (its marker's doorbell) at 1000 ms, the drain from 990 ms
    const s = sim({ activity: [0, 1000], command: drainFrom(990) });
    const d = await s.watch.declared;
    t.ok(d, "declared");
    t.equal(d?.command.id, 7);
    t.same(
      s.cuts.map((c) => c.id),
      [7],
      "the drain's wait cut once",
    );
    const at = s.cuts[0]?.at ?? 0;
    t.ok(at >= 1000 + SETTLE_MS + CONFIRM_MS, `not before the settle time and the confirmation (${at} ms)`);
    t.ok(at < 1000 + 2 * SETTLE_MS + 400, `well before a 10 s watchdog (${at} ms)`);
    t.match(d?.why, /the device had been idle for \d+ ms with nothing in flight/);
  },
);

t.test("must not declare: a stall with a timer the device still owes", async (t) => {
  const s = sim({ activity: [0, 1000], owedUntil: 5000, command: drainFrom(990), endMs: 4500 });
  t.equal(await s.watch.declared, undefined);
  t.same(s.cuts, []);
  t.equal(s.questions(), 0, "the guest is not even asked while the device owes work");
});

t.test("after the owed timer's work: declared once quiet again", async (t) => {
  // the stall ends at 3000 and its WQE (the marker) is not completed: still hung (say a dropped CQE)
  const s = sim({ activity: [0, 1000, 3000], owedUntil: 3000, command: drainFrom(990) });
  t.ok(await s.watch.declared);
  t.ok((s.cuts[0]?.at ?? 0) >= 3000 + SETTLE_MS);
});

t.test("must not declare: a REFLUSH the driver sends late keeps the device busy", async (t) => {
  // the driver's reflush (20 ms delayed work) and the device's flush: activity every 20-300 ms, then done
  const activity = [0, 1000, 1020, 1300, 1500, 1780];
  const s = sim({
    activity,
    // the drain returns at 1800: its marker was flushed
    command: (now) =>
      now >= 990 && now < 1800 ? { id: 7, op: "drain", ms: now - 990, state: "D (disk sleep)" } : undefined,
    endMs: 6000,
  });
  t.equal(await s.watch.declared, undefined);
  t.same(s.cuts, []);
});

t.test("must not declare: the device acts while the guest answers", async (t) => {
  const s = sim({
    activity: [0, 1000],
    command: drainFrom(990),
    activityDuringAnswer: 1,
    endMs: 1000 + SETTLE_MS + 400,
  });
  t.equal(await s.watch.declared, undefined, "the first round sees the activity");
  t.same(s.cuts, []);
});

t.test("must not declare: not a drain, a drain that runs, a drain just begun", async (t) => {
  for (const [what, command] of [
    ["a poll that waits", (now: number) => ({ id: 3, op: "poll", ms: now, state: "D (disk sleep)" })],
    ["a sleep step", (now: number) => ({ id: 3, op: "sleep", ms: now, state: "S (sleeping)" })],
    ["a drain running on the CPU", drainFrom(0, "R (running)")],
    ["nothing running", () => undefined],
  ] as const) {
    const s = sim({ activity: [0], command, endMs: 4000 });
    t.equal(await s.watch.declared, undefined, what);
    t.same(s.cuts, [], what);
  }
  t.notOk(
    waitsOnDevice({ id: 1, op: "drain", ms: SETTLE_MS - 1, state: "D (disk sleep)" }, SETTLE_MS),
    "just begun",
  );
  t.ok(waitsOnDevice({ id: 1, op: "drain", ms: SETTLE_MS, state: "S (sleeping)" }, SETTLE_MS));
  t.notOk(quietFor({ quietMs: 10_000, owed: ["1 deferred job(s) queued or running"], held: [] }, SETTLE_MS));
});

t.test("a step that is not a drain is asked about once per quiet spell", async (t) => {
  const s = sim({
    activity: [0],
    command: (now) => ({ id: 3, op: "sleep", ms: now, state: "S (sleeping)" }),
    endMs: 5000,
  });
  t.equal(await s.watch.declared, undefined);
  t.equal(s.questions(), 1, "a drain would touch the device first");
});

t.test(
  "must not declare, nor ask the guest: the device holds nothing (a CQE dropped, a doorbell ignored)",
  async (t) => {
    const s = sim({ activity: [0, 1000], command: drainFrom(990), nothingHeld: true, endMs: 6000 });
    t.equal(await s.watch.declared, undefined, "the watchdog decides");
    t.equal(s.questions(), 0);
  },
);

t.test("a device that cannot tell: the watch ends, the watchdog stays", async (t) => {
  const s = sim({ cannotTell: true, command: drainFrom(0) });
  t.equal(await s.watch.declared, undefined);
  t.equal(s.questions(), 0);
});

t.test("stopped: settles at once, even while it waits", async (t) => {
  const never = new Promise<void>(() => {});
  const deps: EarlyHangDeps = {
    idle: async () => ({ quietMs: 0, owed: [], held: [] }),
    probe: { running: async () => undefined, cut: async () => {} },
    sleep: () => never,
    now: () => 0,
  };
  const w = watchForHang(deps);
  await new Promise((r) => setImmediate(r));
  w.stop();
  t.equal(await w.declared, undefined);
});

t.test("a guest that does not answer: the watch ends quietly", async (t) => {
  const deps: EarlyHangDeps = {
    idle: async () => ({
      quietMs: 10_000,
      owed: [],
      held: ["QP 2 sq: 1 WQE block(s) in ERROR, not flushed"],
    }),
    probe: {
      running: async () => {
        throw new Error("ssh: channel closed");
      },
      cut: async () => {},
    },
    sleep: async () => {},
    now: () => 0,
  };
  t.equal(await watchForHang(deps).declared, undefined);
});
