// A harness fault is never a driver verdict, on a real debian:6.12 guest with the emulated erdma
// device: the device server or QEMU killed while a scenario runs makes that scenario an ERROR
// naming the dead process and the run exit 3, within seconds of the kill (noticed from the
// process's exit, not from the executor's timeouts), with nothing left running. A QEMU stopped
// with SIGSTOP (frozen: alive, answering nothing) is noticed from its state, as fast. The same for
// a two-guest ULP scenario: the device server serving both guests killed mid-scenario.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { isolate } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";
import { pausedScenario, pidUnder, RUN_612_LINUX, startRunningScenario } from "./live-run.ts";
import { exitText, expectRowLeftNothing, faultTable } from "./table.ts";

t.setTimeout(30 * 60 * 1000);

const table = faultTable(import.meta.url);

const VICTIMS = {
  "device server": {
    program: /node$/,
    signal: "SIGKILL",
    reason: /^the device server \(pid \d+\) was killed by SIGKILL while the scenario ran: a harness fault/,
  },
  QEMU: {
    program: /qemu-system/,
    signal: "SIGKILL",
    reason: /^QEMU \(pid \d+\) was killed by SIGKILL while the scenario ran: a harness fault/,
  },
  "QEMU frozen": {
    program: /qemu-system/,
    signal: "SIGSTOP",
    reason:
      /^QEMU \(pid \d+\) was stopped \(SIGSTOP or a tracer\) for \d+\.\d s while the scenario ran: a harness fault/,
  },
} as const;

for (const [target, victim] of Object.entries(VICTIMS)) {
  const what = victim.signal === "SIGKILL" ? `the ${target} killed` : `${target} (SIGSTOP)`;
  t.test(`${what} mid-scenario: an ERROR naming it, exit 3, within 10 s`, async (t) => {
    const row = table.row(t, `${victim.signal} of ${target.replace(" frozen", "")} mid-scenario`);
    const iso = isolate();
    const root = t.testdir({});
    const file = join(root, "killed-mid-scenario.yaml");
    writeFileSync(file, pausedScenario(8000));
    const dir = join(root, "run");
    const run = await startRunningScenario(t, [...RUN_612_LINUX, "--scenario", file], dir, iso);
    const pid = pidUnder(iso.tmp, victim.program);
    t.ok(pid, `the ${target} runs under ${iso.tmp}`);
    if (pid === undefined) return;
    process.kill(pid, victim.signal);
    const killedAt = Date.now();
    const exit = await run.exited;
    const afterKillMs = exit.at - killedAt;
    const out = run.output().slice(-5000);
    row.exit = exitText(exit);
    row.ms = afterKillMs;
    t.equal(exit.code, 3, "a harness fault is an ERROR: exit 3", { output: out });
    t.ok(afterKillMs < 10_000, `hil ended ${afterKillMs} ms after the ${victim.signal}`);
    const s = scenarioOf(dir, "killed-mid-scenario");
    row.verdict = `${verdictsOf(s).join(", ")}: ${s.outcome?.reason ?? ""}`.replace(
      /: a harness fault.*$/,
      "",
    );
    t.same(verdictsOf(s), ["linux ERROR"], "the scenario's verdict", { output: out });
    t.match(s.outcome?.reason, victim.reason, "the verdict names the dead process");
    t.notMatch(out, /\bFAIL\b/, "nothing is blamed on the driver");
    expectRowLeftNothing(t, row, iso);
  });
}

t.test(
  "the device server of a guest pair killed mid-scenario: an ERROR naming it, exit 3, within 10 s",
  async (t) => {
    const row = table.row(t, "SIGKILL of the device server of a two-guest ULP scenario");
    const iso = isolate();
    const root = t.testdir({});
    const file = join(root, "pair-killed.yaml");
    writeFileSync(
      file,
      [
        "description: NVMe-oF across two guests, a long pause once connected (the fault is made in it)",
        "workload: nvme-rdma",
        "guests: 2",
        "covers: [ulp-steps, hang]",
        "profiles: [linux]",
        "drivers: [erdma]",
        "executors: [kernel]",
        "steps:",
        "  - ulp: target-up",
        "  - ulp: connect",
        "  - sleep: 8000",
        "  - ulp: disconnect",
        "  - ulp: target-down",
        "",
      ].join("\n"),
    );
    const dir = join(root, "run");
    const run = await startRunningScenario(t, ["run", "--scenario", file], dir, iso);
    const pid = pidUnder(iso.tmp, /node$/);
    t.ok(pid, `the device server runs under ${iso.tmp}`);
    if (pid === undefined) return;
    process.kill(pid, "SIGKILL");
    const killedAt = Date.now();
    const exit = await run.exited;
    const out = run.output().slice(-5000);
    row.exit = exitText(exit);
    row.ms = exit.at - killedAt;
    t.equal(exit.code, 3, "a harness fault is an ERROR: exit 3", { output: out });
    t.ok(row.ms < 10_000, `hil ended ${row.ms} ms after the SIGKILL`);
    const s = scenarioOf(dir, "pair-killed");
    row.verdict = `${verdictsOf(s).join(", ")}: ${s.outcome?.reason ?? ""}`.replace(
      /: a harness fault.*$/,
      "",
    );
    t.same(verdictsOf(s), ["linux ERROR"], "the scenario's verdict", { output: out });
    t.match(s.outcome?.reason, /^the device server \(pid \d+\) was killed by SIGKILL while the scenario ran/);
    t.notMatch(out, /\bFAIL\b/, "nothing is blamed on the driver");
    expectRowLeftNothing(t, row, iso);
  },
);
