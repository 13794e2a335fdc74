// The guest goes wrong under a `hil run` on a real debian:6.12 guest with the emulated erdma
// device, from inside, reached over SSH as hil reaches it: its SSH server stopped (SIGSTOP: QEMU
// and the kernel run on, nothing answers) is an ERROR that says so, once hil has asked again and
// an NMI found the CPU idle (not a freeze of the kernel); a kernel panic mid-scenario is a FAIL of
// the console rule with the panic and its stack as the evidence, exit 1. Nothing is left either way.
import { join } from "node:path";
import t, { type Test } from "tap";
import { isolate } from "../support/cli.ts";
import { ruleOf, scenarioOf, verdictsOf } from "../support/verdicts.ts";
import { pausedScenario, RUN_612_LINUX, sendToGuest, startRunningScenario } from "./live-run.ts";
import { exitText, expectRowLeftNothing, type FaultRow, faultTable } from "./table.ts";

t.setTimeout(30 * 60 * 1000);

const table = faultTable(import.meta.url);

/** A `hil run` of the paused scenario; `command` is run in its guest once the scenario runs; the
 * run's exit and its time after the command go in `row`. */
async function runAndSend(t: Test, row: FaultRow, command: string) {
  const iso = isolate();
  const root = t.testdir({ "guest-fault.yaml": pausedScenario(8000) });
  const dir = join(root, "run");
  const scenario = join(root, "guest-fault.yaml");
  const run = await startRunningScenario(t, [...RUN_612_LINUX, "--scenario", scenario], dir, iso);
  const sentAt = Date.now();
  await sendToGuest(iso.tmp, command, 0);
  const exit = await run.exited;
  row.exit = exitText(exit);
  row.ms = exit.at - sentAt;
  return { iso, dir, exit, afterMs: exit.at - sentAt, output: run.output() };
}

t.test("the guest's SSH server stopped mid-scenario: an ERROR saying so, exit 3", async (t) => {
  const row = table.row(t, "the guest stops answering SSH (dropbear SIGSTOPped), QEMU lives");
  // every dropbear: the listener and the sessions serving hil's connection and ours
  const r = await runAndSend(t, row, "kill -STOP $(pidof dropbear)");
  t.equal(r.exit.code, 3, "not judged: exit 3", { output: r.output.slice(-4000) });
  const s = scenarioOf(r.dir, "guest-fault");
  row.verdict = `${verdictsOf(s).join(", ")}: ${(s.outcome?.reason ?? "").replace(/^.*; /, "")}`;
  t.same(verdictsOf(s), ["linux ERROR"], "the scenario could not be judged");
  t.match(
    s.outcome?.reason,
    /stopped answering SSH while QEMU ran, with its CPU idle \(an NMI found it in \S+\): not a freeze of the kernel/,
    "the reason says the guest went silent and the kernel did not freeze",
  );
  // bounded by the harness's own waits, not by SSH retries: the step's watchdog (the 8 s pause + 5 s,
  // harness/scenario/compile.ts) and the executor's 30 s beyond it (kverbs-driver.ts), the guest
  // asked again 3 x 10 s, the NMI's report awaited up to 30 s (harness/suite/freeze.ts): 103 s,
  // and the guest's disposal and the run's end under a loaded TCG host
  t.ok(r.afterMs < 200_000, `the verdict ${Math.round(r.afterMs / 1000)} s after the stop (bound 200 s)`);
  expectRowLeftNothing(t, row, r.iso);
});

t.test(
  "a kernel panic mid-scenario: a FAIL of the console rule with the panic as evidence, exit 1",
  async (t) => {
    const row = table.row(t, "guest kernel panic mid-scenario (sysrq c)");
    const r = await runAndSend(t, row, "echo c > /proc/sysrq-trigger");
    t.equal(r.exit.code, 1, "a FAIL: exit 1", { output: r.output.slice(-4000) });
    const s = scenarioOf(r.dir, "guest-fault");
    const consoleRule = ruleOf(s, "linux", "console");
    row.verdict = `${verdictsOf(s).join(", ")}: console rule ${consoleRule?.verdict}: ${consoleRule?.reason ?? ""}`;
    t.same(verdictsOf(s), ["linux FAIL"], "the driver's run is judged: a FAIL");
    t.equal(consoleRule?.verdict, "FAIL", "by the console rule");
    t.match(
      [consoleRule?.reason, ...(consoleRule?.evidence ?? [])].join("\n"),
      /Kernel panic - not syncing: sysrq triggered crash/,
      "the panic is the evidence",
    );
    t.match((consoleRule?.evidence ?? []).join("\n"), /sysrq_handle_crash/, "with its stack");
    t.ok(r.afterMs < 60_000, `the verdict ${Math.round(r.afterMs / 1000)} s after the panic`);
    expectRowLeftNothing(t, row, r.iso);
  },
);
