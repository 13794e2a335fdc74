/**
 * A sleep until the device is idle (harness/suite/device-idle.ts): it ends once the device has
 * been quiet a moment with nothing it will still do by itself, at its ms when that never comes,
 * and lasts its whole ms where the device cannot tell. On a clock the test drives.
 */
import t from "tap";
import { IDLE_QUIET_MS, sleepUntilDeviceIdle } from "../../harness/suite/device-idle.ts";
import type { IdleReport } from "../../qemu/erdma/idle.ts";

/** A clock that moves only when the wait sleeps, and a device whose report is read off it. */
function scripted(report: (now: number) => IdleReport | undefined) {
  let now = 0;
  const asked: number[] = [];
  return {
    asked,
    wait: (ms: number) =>
      sleepUntilDeviceIdle(
        async () => {
          asked.push(now);
          return report(now);
        },
        ms,
        () => now,
        async (d) => {
          now += d;
        },
      ),
  };
}

t.test("ends once the device has been quiet a moment with nothing owed", async (t) => {
  // busy until 130 ms (a job queued), then quiet since 130
  const s = scripted((now) =>
    now < 130
      ? { quietMs: 0, owed: ["1 deferred job(s) queued or running"], held: [] }
      : { quietMs: now - 130, owed: [], held: [] },
  );
  const r = await s.wait(1000);
  t.ok(r.idle, "idle");
  t.ok(r.waitedMs >= 130 + IDLE_QUIET_MS && r.waitedMs < 130 + IDLE_QUIET_MS + 25, `after ${r.waitedMs} ms`);
});

t.test("a timer a fault set keeps it waiting, however quiet the device is", async (t) => {
  const s = scripted((now) => ({
    quietMs: now,
    owed: now < 600 ? [`coalesce-irq (fault 1) fires in ${600 - now} ms`] : [],
    held: [],
  }));
  const r = await s.wait(1500);
  t.ok(r.idle && r.waitedMs >= 600 && r.waitedMs < 625, `idle after the timer, ${r.waitedMs} ms`);
});

t.test("never idle: the whole ms; cannot tell: the whole ms, asked once", async (t) => {
  const busy = scripted(() => ({ quietMs: 0, owed: ["1 deferred job(s) queued or running"], held: [] }));
  t.same(await busy.wait(300), { waitedMs: 300, idle: false });
  const mute = scripted(() => undefined);
  t.same(await mute.wait(300), { waitedMs: 300, idle: false });
  t.same(mute.asked, [0, 300], "asked at the start, and once more when the time was up");
});
