// The sysrq-w command the kernel executor sends after a hang, run here by the host's sh with a fake
// dmesg (a log file, and the dump the trigger "writes"): it says whether sysrq-w ran and whether
// its newest dump lists the stuck worker.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { sysrqW } from "../../harness/executor/kernel.ts";

const OLD_DUMP = [
  "[    9.1] sysrq: Show Blocked State",
  "[    9.2] task:hil_kverbs      state:D stack:0     pid:97    ppid:2      flags:0x00004000",
];
const BOOT = ["[    0.1] Linux version 6.1.0", "[    4.6] hil_kverbs: loading out-of-tree module"];

function run(t: Test, before: string[], dump: string[]) {
  const dir = t.testdir({});
  writeFileSync(join(dir, "log"), before.map((l) => `${l}\n`).join(""));
  writeFileSync(join(dir, "dump"), dump.map((l) => `${l}\n`).join(""));
  // once the trigger file has something in it, the dump is in the log
  const dmesg = `{ cat ${dir}/log; [ -s ${dir}/trigger ] && cat ${dir}/dump; }`;
  return spawnSync("sh", ["-c", sysrqW(97, dmesg, `${dir}/trigger`)], { encoding: "utf8" });
}

t.test("a dump listing the worker: ran and listed", async (t) => {
  const r = run(t, BOOT, [
    "[   15.2] sysrq: Show Blocked State",
    "[   15.3] task:hil_kverbs      state:D stack:0     pid:97    tgid:97   ppid:2      flags:0x00004000",
  ]);
  t.equal(r.status, 0);
  t.equal(r.stdout, "sysrq-w dumped\nsysrq-w listed the worker\n");
});

t.test("a dump taken while the drain polled its CQ: ran, the worker not listed", async (t) => {
  const r = run(t, BOOT, ["[   15.2] sysrq: Show Blocked State"]);
  t.equal(r.stdout, "sysrq-w dumped\n");
});

t.test("only the newest dump counts: an older one listing the worker does not", async (t) => {
  const r = run(
    t,
    [...BOOT, ...OLD_DUMP],
    ["[   15.2] sysrq: Show Blocked State", "[   15.3] task:kworker/0:1 state:D pid:12 ppid:2"],
  );
  t.equal(r.stdout, "sysrq-w dumped\n");
});

t.test("another pid with the same digits is not the worker", async (t) => {
  const r = run(t, BOOT, [
    "[   15.2] sysrq: Show Blocked State",
    "[   15.3] task:x state:D stack:0 pid:970 ppid:2",
  ]);
  t.equal(r.stdout, "sysrq-w dumped\n");
});

t.test("no new header: sysrq-w did not run", async (t) => {
  const r = run(t, [...BOOT, ...OLD_DUMP], []);
  t.equal(r.stdout, "");
  t.equal(r.status, 0);
});
