// The CEQ handler's budget, on a real debian:6.12 guest with the emulated erdma: ceq-budget-drain
// makes twenty armed CQs complete while the device holds their interrupt (until its raise-irq
// step, once the device is idle), so one run of erdma's CEQ handler finds more events than it
// polls (16); the real driver re-arms and comes back, and the scenario passes with the hardware
// trace showing the events that waited. The same scenario on a driver that skips the re-arm after
// a full budget (fixtures/mutants) is a new FAIL.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(30 * 60 * 1000);

const SCENARIO = "ceq-budget-drain";
const REARM_SKIPPED = "fixtures/mutants/ceq-rearm-skipped-after-full-chunk.mbox";
/** MAX_POLL_CHUNK_SIZE, drivers/infiniband/hw/erdma/erdma_eq.c (6.12) */
const CEQ_HANDLER_BUDGET = 16;

interface HwEvent {
  kind: string;
  action?: string;
  fault?: { kind?: string };
  eq?: number | string;
  vector?: number;
  delivered?: boolean;
  source?: string;
}

t.test(
  `${SCENARIO} on debian:6.12: more CEQEs than one handler run polls wait, and the drain passes`,
  async (t) => {
    const { iso, dir, r } = await hilWithRunDir(
      ["run", "--kernel", "debian:6.12", "--scenario", SCENARIO],
      t,
    );
    t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
    const s = scenarioOf(dir, SCENARIO);
    t.same(verdictsOf(s), ["ib PASS", "iwarp-rdmac PASS", "linux PASS"]);
    const hw = readFileSync(join(dir, s.hwTrace ?? "none"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as HwEvent);
    const fired = hw.findIndex(
      (e) => e.kind === "fault" && e.action === "fired" && e.fault?.kind === "coalesce-irq",
    );
    t.ok(fired >= 0, "the interrupt was held");
    const raised = hw.findIndex(
      (e) => e.kind === "fault" && e.action === "fired" && e.fault?.kind === "raise-irq",
    );
    t.ok(raised > fired, "until the raise-irq step, after the device was idle");
    const held = hw.findIndex(
      (e, i) => i > raised && e.kind === "irq" && /held until raised: injected/.test(e.source ?? ""),
    );
    t.ok(held > raised, "and raised then");
    const waiting = hw
      .slice(fired, held)
      .filter((e) => e.kind === "eqe" && typeof e.eq === "number" && e.eq > 0);
    t.ok(
      waiting.length > CEQ_HANDLER_BUDGET,
      `${waiting.length} CEQEs waited for one handler run: more than its budget of ${CEQ_HANDLER_BUDGET}`,
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  },
);

t.test("a driver that skips the CEQ re-arm after a full budget: a new FAIL", async (t) => {
  const { iso, r } = await hilWithRunDir(
    ["validate", "--kernel", "debian:6.12", "--series", REARM_SKIPPED, "--scenario", SCENARIO],
    t,
  );
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    new RegExp(`^${SCENARIO}\\s+(?:[\\w-]+,)*linux(?:,[\\w-]+)*\\s+PASS\\s+FAIL\\s+NEW FAIL`, "m"),
  );
  t.match(r.stdout, /^\s+rule (9|hang): PASS -> FAIL/m, "the drain is what breaks");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
