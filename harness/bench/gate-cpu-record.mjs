// Loaded with --import into every node process of a `npx tap` run (harness/bench/gate-cpu.ts):
// a test file's process appends, when it exits, its own CPU and that of the children it reaped
// (QEMU, hil's CLI, device servers, compilers) to the JSON-lines file HIL_GATE_CPU_LOG names.
// /proc/self/stat fields 14-17: utime, stime, cutime, cstime, in clock ticks (USER_HZ, 100).
import { appendFileSync, readFileSync } from "node:fs";

const log = process.env.HIL_GATE_CPU_LOG;
// a test file runs as the script of its own process; tap's runner only names files among its arguments
const file = process.argv[1]?.endsWith(".test.ts") ? process.argv[1] : undefined;
if (log && file) {
  const started = Date.now();
  process.on("exit", () => {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
    const [utime, stime, cutime, cstime] = fields.slice(11, 15);
    const line = {
      file,
      selfS: (utime + stime) / 100,
      childrenS: (cutime + cstime) / 100,
      wallS: (Date.now() - started) / 1000,
    };
    appendFileSync(log, `${JSON.stringify(line)}\n`);
  });
}
