// A harness fault is never a driver verdict, on a real debian:6.12 guest with the emulated erdma
// device: the device server or QEMU killed while a scenario runs makes that scenario an ERROR
// naming the dead process and the run exit 3, within seconds of the kill (noticed from the
// process's exit, not from the executor's timeouts), with nothing left running.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { HIL_BIN, type Isolation, isolate, leftovers, processesUsing, REPO_ROOT } from "../support/cli.ts";
import { scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(20 * 60 * 1000);

const SCENARIO = `description: receives posted, a long pause (the harness is killed in it), then a drain
covers: [9]
drivers: [erdma]
steps:
  - post_recv: { count: 4 }
  - sleep: 8000
  - drain: { which: qp }
`;

interface KilledRun {
  exitCode: number | null;
  output: string;
  /** from the kill to hil's exit */
  afterKillMs: number;
}

/** The pid of the live process under `tmp` whose command line starts with `program`. */
function pidOf(tmp: string, program: RegExp): number | undefined {
  const line = processesUsing(tmp).find((p) => program.test(p.split(" ")[1] ?? ""));
  return line ? Number(line.split(" ")[0]) : undefined;
}

/** `hil run` of the scenario; once its QP is connected, the process `victim` names is SIGKILLed. */
function runAndKill(
  file: string,
  dir: string,
  iso: Isolation,
  victim: () => number | undefined,
): Promise<KilledRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      HIL_BIN,
      ["run", "--kernel", "debian:6.12", "--rules", "linux", "--scenario", file, "--run-dir", dir],
      { cwd: REPO_ROOT, env: { ...process.env, ...iso.env }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let output = "";
    let armed = false;
    let killedAt: number | undefined;
    const onData = (b: Buffer) => {
      output += b.toString();
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const hwTrace = join(dir, "hw-trace.jsonl");
    const poll = setInterval(() => {
      if (armed) return;
      // the scenario's QP is connected (the probes' QPs never reach RTS): its steps run now
      if (!existsSync(hwTrace) || !/"object":"qp"[^\n]*"to":"RTS"/.test(readFileSync(hwTrace, "utf8")))
        return;
      armed = true;
      clearInterval(poll);
      // into the scenario's sleep step
      setTimeout(() => {
        const pid = victim();
        if (pid === undefined) {
          child.kill("SIGTERM");
          reject(new Error(`nothing to kill under ${iso.tmp}:\n${output}`));
          return;
        }
        process.kill(pid, "SIGKILL");
        killedAt = Date.now();
      }, 1500);
    }, 100);
    child.on("exit", (code) => {
      clearInterval(poll);
      resolve({ exitCode: code, output, afterKillMs: killedAt === undefined ? -1 : Date.now() - killedAt });
    });
  });
}

const VICTIMS = {
  "device server": {
    program: /node$/,
    reason: /^the device server \(pid \d+\) was killed by SIGKILL while the scenario ran: a harness fault/,
  },
  QEMU: {
    program: /qemu-system/,
    reason: /^QEMU \(pid \d+\) was killed by SIGKILL while the scenario ran: a harness fault/,
  },
} as const;

for (const [target, victim] of Object.entries(VICTIMS)) {
  t.test(`the ${target} killed mid-scenario: an ERROR naming it, exit 3, within 10 s`, async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    const file = join(root, "killed-mid-scenario.yaml");
    writeFileSync(file, SCENARIO);
    const dir = join(root, "run");
    const r = await runAndKill(file, dir, iso, () => pidOf(iso.tmp, victim.program));
    const out = r.output.slice(-5000);
    t.ok(r.afterKillMs >= 0, `the ${target} was killed`, { output: out });
    t.equal(r.exitCode, 3, "a harness fault is an ERROR: exit 3", { output: out });
    t.ok(r.afterKillMs < 10_000, `hil ended ${r.afterKillMs} ms after the kill`);
    const s = scenarioOf(dir, "killed-mid-scenario");
    t.same(verdictsOf(s), ["linux ERROR"], "the scenario's verdict", { output: out });
    t.match(s.outcome?.reason, victim.reason, "the verdict names the dead process");
    t.notMatch(out, /\bFAIL\b/, "nothing is blamed on the driver");
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  });
}
