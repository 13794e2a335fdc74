// Keeping a guest after a hung drain (harness/suite/recover.ts): only a drain, alone stuck, on
// erdma with a control channel and an executor that can be taken back; the device is asked to let
// the drain go as often as the executor asks, the device must hold no QP after the reset, and the
// next console slice starts after a barrier written once the recovery is over.
import t from "tap";
import type { ScenarioExecutor } from "../../harness/executor/executor.ts";
import type { StuckObservation } from "../../harness/protocol/observations.ts";
import type { DeviceControl } from "../../harness/suite/faults.ts";
import type { ObservedOutcome } from "../../harness/suite/observe.ts";
import { keepable, recoverAfterHang } from "../../harness/suite/recover.ts";
import type { GuestSession } from "../../harness/suite/session.ts";
import type { ControlReply } from "../../qemu/erdma/control.ts";

const stuckDrain: StuckObservation = {
  ev: "stuck",
  step: 1,
  op: "drain",
  ms: 700,
  stack: "__ib_drain_sq",
  state: "D (disk sleep)",
};

function outcome(over: Partial<ObservedOutcome> = {}): ObservedOutcome {
  return { records: [], stuck: [stuckDrain], sent: [], observations: [], durationMs: 900, ...over };
}

/** A session whose executor is wedged and recovers after `releasesNeeded` releases (or never). */
function session(opts: { releasesNeeded?: number; recover?: false; wedged?: boolean } = {}) {
  let consoleText = "[ 1.0] boot\n";
  const barriers: number[] = [];
  let wedged = opts.wedged ?? true;
  const executor: ScenarioExecutor = {
    kind: "kernel",
    get wedged() {
      return wedged;
    },
    runScenario: async () => ({ records: [], stuck: [], sent: [] }),
    close: async () => {},
    async barrier(id) {
      barriers.push(id);
      consoleText += `[ 2.0] hil-mark ${id}\n`;
    },
    ...(opts.recover === false
      ? {}
      : {
          async recover(release: () => Promise<void>, _ms: number, barrier?: number) {
            for (let i = 1; i <= 5; i++) {
              await release();
              if (opts.releasesNeeded !== undefined && i >= opts.releasesNeeded) {
                wedged = false;
                // the barrier written with the reset
                if (barrier !== undefined) {
                  barriers.push(barrier);
                  consoleText += `[ 2.0] hil-mark ${barrier}\n`;
                }
                return undefined;
              }
            }
            return "the worker is still in drain after 3000 ms (D (disk sleep))";
          },
        }),
  };
  const s = {
    guest: { consoleLog: () => consoleText },
    executor,
    consoleAt: consoleText.length,
    barriers: 0,
  } as unknown as GuestSession;
  return { s, barriers };
}

function control(qpsAfter: number[] = [], releaseFails = false) {
  const asked: string[] = [];
  const c: DeviceControl = {
    async control(req): Promise<ControlReply> {
      asked.push(String(req.op));
      if (req.op === "release")
        return releaseFails ? { ok: false, error: "no device" } : { ok: true, qps: [3] };
      if (req.op === "snapshot") return { ok: true, state: { qps: qpsAfter } };
      return { ok: false, error: "unexpected" };
    },
  };
  return { c, asked };
}

t.test(
  "what may be kept: one stuck drain on erdma, with a control channel and a recoverable executor",
  async (t) => {
    const { c } = control();
    t.equal(keepable("erdma", session().s, outcome(), c), undefined);
    t.match(keepable("siw", session().s, outcome(), c), /siw driver's drain is not the device's/);
    t.match(keepable("erdma", session().s, outcome(), undefined), /no control channel/);
    t.match(keepable("erdma", session({ recover: false }).s, outcome(), c), /cannot be taken back/);
    t.match(keepable("erdma", session().s, outcome({ error: "setup failed" }), c), /the run broke/);
    t.match(keepable("erdma", session().s, outcome({ harnessFault: "QEMU died" }), c), /the run broke/);
    t.match(keepable("erdma", session().s, outcome({ wedged: true }), c), /the run broke/);
    t.match(keepable("erdma", session({ wedged: false }).s, outcome(), c), /nothing is stuck/);
    t.match(
      keepable("erdma", session().s, outcome({ stuck: [{ ...stuckDrain, op: "connect" }] }), c),
      /not one drain/,
    );
    t.match(keepable("erdma", session().s, outcome({ stuck: [stuckDrain, stuckDrain] }), c), /not one drain/);
  },
);

t.test(
  "kept: released as often as the executor asks, no QP left, the console cut after a barrier",
  async (t) => {
    const { c, asked } = control();
    const { s, barriers } = session({ releasesNeeded: 2 });
    t.equal(await recoverAfterHang("erdma", s, outcome(), c), undefined);
    t.same(asked, ["release", "release", "snapshot"], "the SQ's marker, then the RQ's, then the check");
    t.same(barriers, [1], "a barrier written with the recovery's reset");
    t.equal(s.barriers, 1);
    t.equal(s.consoleAt, s.guest.consoleLog().length, "the next slice starts after it");
    t.equal(s.executor.wedged, false);
  },
);

t.test("not kept: the drain does not return, a QP stays, the device cannot release", async (t) => {
  t.match(
    await recoverAfterHang("erdma", session().s, outcome(), control().c),
    /still in drain after 3000 ms/,
  );
  t.match(
    await recoverAfterHang(
      "erdma",
      session({ releasesNeeded: 1 }).s,
      outcome(),
      control([{ qpn: 3 }] as never).c,
    ),
    /still holds 1 QP\(s\) after the reset/,
  );
  await t.rejects(
    recoverAfterHang("erdma", session({ releasesNeeded: 1 }).s, outcome(), control([], true).c),
    /the device did not let its QPs go: no device/,
  );
  t.match(
    await recoverAfterHang("siw", session().s, outcome(), control().c),
    /siw/,
    "nothing asked of a siw run",
  );
});
