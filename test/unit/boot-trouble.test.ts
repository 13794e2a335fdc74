// What hil boot says when its command's guest went wrong underneath it (harness/cli/boot-trouble.ts),
// from real captured consoles: a panic is printed with what led to it (exit 1); a dead device
// server or QEMU is named (exit 3); a guest that still runs is no trouble.
import { readFileSync } from "node:fs";
import t from "tap";
import { bootTrouble } from "../../harness/cli/boot-trouble.ts";

const capture = (name: string) =>
  readFileSync(new URL(`../fixtures/console/${name}.log`, import.meta.url), "utf8");

const guest = (over: object) => ({
  pid: 100,
  qemuExit: undefined,
  device: undefined,
  consoleLog: () => "",
  ...over,
});

t.test("a panic after a WARN: the panic, then the WARN that led to it, with their stacks", async (t) => {
  const e = bootTrouble(
    guest({ qemuExit: { exitCode: 0 }, consoleLog: () => capture("panic-on-warn-6.12-siw") }),
  );
  t.equal(e?.exitCode, 1);
  t.match(e?.message, /^the guest kernel panicked while the command ran: Kernel panic - not syncing: /);
  t.match(e?.detail, /^after: warn: /);
});

t.test("the sysrq crash: its stack is in the detail", async (t) => {
  const e = bootTrouble(guest({ qemuExit: { exitCode: 0 }, consoleLog: () => capture("sysrq-crash-6.12") }));
  t.match(e?.message, /sysrq triggered crash/);
  t.match(e?.detail, /sysrq_handle_crash/);
});

t.test("QEMU at status 0 without a panic, killed QEMU, a dead device server", async (t) => {
  const off = bootTrouble(guest({ qemuExit: { exitCode: 0 }, consoleLog: () => "reboot: Power down\n" }));
  t.equal(off?.exitCode, 3);
  t.match(off?.message, /^the guest ended while the command ran/);
  const killed = bootTrouble(guest({ qemuExit: { signal: "SIGKILL" } }));
  t.equal(killed?.message, "QEMU (pid 100) was killed by SIGKILL while the command ran");
  t.equal(killed?.exitCode, 3);
  const device = bootTrouble(guest({ device: { pid: 7, exit: { code: null, signal: "SIGKILL" } } }));
  t.match(device?.message, /^the device server \(pid 7\) was killed by SIGKILL while the command ran/);
  t.equal(device?.exitCode, 3);
  t.equal(bootTrouble(guest({})), undefined, "a guest that runs, with its device: no trouble");
});
