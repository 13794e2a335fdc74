import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import t from "tap";
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import { bootArtifacts, gone, processExists } from "../support/guest.ts";

t.setTimeout(60 * 60 * 1000);

const artifacts = await bootArtifacts();
const scratch = mkdtempSync(join(tmpdir(), "hil-boot-test-"));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
const keptConsole = join(scratch, "kept/console.log");

const guest: Guest = await startGuest({
  qemu: artifacts.qemu,
  kernel: artifacts.kernel.bzImage,
  initrd: artifacts.initrd,
  keepConsole: keptConsole,
});
t.comment(`boot timings: ${JSON.stringify(guest.timings)}`);

t.test("the guest runs the kernel that was built", async (t) => {
  const r = await guest.exec("cat /proc/version");
  t.equal(r.exitCode, 0);
  t.equal(r.stdout.split(" ")[2], artifacts.kernel.release);
  t.match(guest.consoleLog(), /HIL-GUEST-READY/);
});

t.test("erdma loads; rdma-core tools run", async (t) => {
  const modprobe = await guest.exec("modprobe erdma && ls -d /sys/module/erdma");
  t.equal(modprobe.exitCode, 0, modprobe.stderr);
  t.equal(modprobe.stdout.trim(), "/sys/module/erdma");
  const devinfo = await guest.exec("ibv_devinfo");
  t.match(devinfo.stdout + devinfo.stderr, /No IB devices found/);
  const rdma = await guest.exec("rdma link show");
  t.equal(rdma.exitCode, 0, rdma.stderr);
  const ip = await guest.exec("ip -br addr show");
  t.match(ip.stdout, /10\.0\.2\.15\/24/, "iproute2's ip (not busybox's) answers on PATH");
  const perftest = await guest.exec("ib_send_bw --help");
  t.match(perftest.stdout + perftest.stderr, /Usage/i);
});

t.test("exit codes propagate; stdout and stderr stay apart", async (t) => {
  t.equal((await guest.exec("exit 3")).exitCode, 3);
  const r = await guest.exec("echo out; echo err >&2");
  t.equal(r.stdout, "out\n");
  t.equal(r.stderr, "err\n");
  const input = await guest.exec("tr a-z A-Z", { input: "abc" });
  t.equal(input.stdout, "ABC");
});

t.test("a command past its timeout is killed in the guest", async (t) => {
  // the pids whose command line is exactly `sleep 301` (busybox has no pgrep)
  const SLEEPERS = `for p in /proc/[0-9]*; do [ "$(tr '\\0' ' ' < "$p/cmdline" 2>/dev/null)" = "sleep 301 " ] && echo "\${p#/proc/}"; done; true`;
  const sleepers = async () => (await guest.exec(SLEEPERS)).stdout.trim().split("\n").filter(Boolean);
  await guest.exec("(sleep 301 >/dev/null 2>&1 &); sleep 0.2");
  t.equal((await sleepers()).length, 1, "the probe sees a running `sleep 301`");
  await guest.exec(`kill $(${SLEEPERS}); sleep 0.2`);
  t.same(await sleepers(), [], "and none once it is killed");
  await t.rejects(guest.exec("sleep 301", { timeoutMs: 1000 }), { name: "HilError", message: /timed out/ });
  t.same(await sleepers(), [], "the timed-out command left no `sleep 301` behind");
});

t.test("files go both ways", async (t) => {
  const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) & 0xff));
  const local = join(scratch, "payload");
  writeFileSync(local, bytes);
  await guest.copyTo(local, "/tmp/payload", { mode: 0o755 });
  const sum = await guest.exec("sha256sum /tmp/payload; stat -c %a /tmp/payload");
  t.match(sum.stdout, /^[0-9a-f]{64} +\/tmp\/payload\n755\n$/);
  await guest.copyFrom("/tmp/payload", join(scratch, "back"));
  t.same(readFileSync(join(scratch, "back")), bytes);
});

t.test("an interactive shell gets a pty", async (t) => {
  const stdin = new PassThrough();
  const stdout = Object.assign(new PassThrough(), { rows: 30, columns: 90 });
  let out = "";
  stdout.on("data", (d) => {
    out += d;
  });
  const status = guest.shell({ stdin, stdout, stderr: new PassThrough() });
  stdin.write("tty; stty size; exit 4\n");
  t.equal(await status, 4);
  t.match(out, /\/dev\/pts\/\d+/);
  t.match(out, /30 90/);
});

t.test("QMP answers", async (t) => {
  const qmp = await guest.qmp();
  const status = await qmp.execute<{ status: string }>("query-status");
  t.equal(status.status, "running");
});

t.test("shutdown powers off; dispose leaves nothing behind", async (t) => {
  const { pid, workDir } = guest;
  const started = Date.now();
  await guest.shutdown();
  t.comment(`shutdown took ${Date.now() - started} ms`);
  t.notOk(guest.running);
  t.notOk(processExists(pid), "QEMU is gone");
  t.match(guest.consoleLog(), /reboot: Power down/);
  await guest.dispose();
  t.ok(gone(workDir), "the run's temp dir is removed");
  t.match(readFileSync(keptConsole, "utf8"), /HIL-GUEST-READY/, "the console was kept where asked");
  await t.rejects(guest.exec("true"), { name: "HilError", message: /the guest is gone/ });
});
