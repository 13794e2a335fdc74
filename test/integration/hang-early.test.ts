// A hung drain told before its watchdog, and the guest kept after it, on a real guest: Linux 6.12
// with the no-reflush-after-post mutant (fixtures/mutants: WRs posted in ERROR are never
// reflushed, so a drain's marker never completes) on the emulated erdma device, one guest. Each
// hung drain is a FAIL of rule hang with the worker's stack as evidence, declared when the device
// had been idle (harness/suite/early-hang.ts), far below the 10 s watchdog; sysrq-w dumped the
// blocked worker on the console; the device then let the drain go (harness/suite/recover.ts) and
// the scenario after the hangs ran on the same guest and passed. Nothing is left running.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hilWithRunDir, leftovers } from "../support/cli.ts";
import { ruleOf, scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(15 * 60 * 1000);

const MUTANT = "fixtures/mutants/no-reflush-after-post.mbox";
/** Linux 6.12 with the mutant, every scenario on one guest */
const MUTANT_ONE_GUEST = ["--kernel", "debian:6.12", "--series", MUTANT, "--guests", "1"];
const WATCHDOG_MS = 10_000;

interface Stuck {
  ev: "stuck";
  op: string;
  ms: number;
  stack: string;
  state: string;
  declared?: string;
}

t.test("hung drains declared early with their stack, the guest kept for the next scenario", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", ...MUTANT_ONE_GUEST, "--scenario", "drain-qp-idle,drain-twice,drain-sq-idle"],
    t,
  );
  t.equal(r.exitCode, 1, `the hangs are FAILs\n${r.stdout.slice(-3000)}${r.stderr.slice(-3000)}`);
  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
  t.equal(record.boots, 1, "one boot: the guest was kept after each hang, not rebooted");
  t.match(r.stderr, /drain-qp-idle: the hung drain was let go, the guest is kept/);
  for (const name of ["drain-qp-idle", "drain-twice"]) {
    const s = scenarioOf(dir, name);
    t.same(verdictsOf(s), ["ib FAIL", "iwarp-rdmac FAIL", "linux FAIL"], name);
    const stuck = s.observations?.find((o) => o.ev === "stuck") as Stuck | undefined;
    t.equal(stuck?.op, "drain", `${name}: the drain is the stuck step`);
    t.match(stuck?.stack, /__ib_drain_[sr]q\+0x/, `${name}: the worker's stack is the evidence`);
    // the QP's CQ polls directly (the scenario default): the drain sleeps (D) and wakes every
    // 100 ms to poll the CQ (drivers/infiniband/core/verbs.c __ib_drain_sq), so a loaded TCG host
    // now and then reads its state while it polls (R)
    t.match(stuck?.state, /^[DR] /, `${name}: in the drain, asleep or polling between its waits`);
    t.match(
      stuck?.declared,
      /the device had been idle for \d+ ms with nothing in flight/,
      `${name}: declared early`,
    );
    t.ok(
      (stuck?.ms ?? WATCHDOG_MS) < WATCHDOG_MS / 2,
      `${name}: declared after ${stuck?.ms} ms, not the watchdog's 10 s`,
    );
    const hang = ruleOf(s, "linux", "hang") as { verdict: string; evidence?: string[] } | undefined;
    t.equal(hang?.verdict, "FAIL", `${name}: rule hang`);
    t.ok(
      hang?.evidence?.some((l) => /declared hung before its watchdog ran out/.test(l)),
      `${name}: the rule's evidence says it was declared early`,
    );
  }
  const console = readFileSync(join(dir, "console.log"), "utf8");
  t.ok(
    (console.match(/sysrq: Show Blocked State/g) ?? []).length >= 2,
    "sysrq-w dumped the blocked worker at each hang",
  );
  t.same(
    verdictsOf(scenarioOf(dir, "drain-sq-idle")),
    ["ib PASS", "iwarp-rdmac PASS", "linux PASS"],
    "the scenario after the hangs ran on the kept guest and passed",
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
