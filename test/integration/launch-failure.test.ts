import { execFile } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import t from "tap";
import { startGuest } from "../../qemu/launch/guest.ts";
import { bootArtifacts, gone, processExists, processGone } from "../support/guest.ts";

t.setTimeout(60 * 60 * 1000);

const artifacts = await bootArtifacts();

function watch() {
  const started: Array<{ pid: number; workDir: string }> = [];
  return { started, onQemuStarted: (info: { pid: number; workDir: string }) => started.push(info) };
}

t.test("a guest whose init does not exist: HilError with the console tail, nothing left", async (t) => {
  const w = watch();
  const err = await startGuest({
    qemu: artifacts.qemu,
    kernel: artifacts.kernel.bzImage,
    initrd: artifacts.initrd,
    kernelArgs: ["rdinit=/no/such/init", "init=/no/such/init"],
    onQemuStarted: w.onQemuStarted,
  }).catch((e: unknown) => e);
  t.match(err, { name: "HilError", message: /the guest never reached SSH/ });
  t.match(
    (err as { detail?: string }).detail,
    /last console lines:[\s\S]*(No working init found|Kernel panic)/,
  );
  t.equal(w.started.length, 1);
  for (const s of w.started) {
    t.notOk(processExists(s.pid), "QEMU is gone");
    t.ok(gone(s.workDir), "the temp dir is gone");
  }
});

t.test("a boot timeout too short for any boot: HilError, QEMU killed, temp dir gone", async (t) => {
  const w = watch();
  const err = await startGuest({
    qemu: artifacts.qemu,
    kernel: artifacts.kernel.bzImage,
    initrd: artifacts.initrd,
    bootTimeoutMs: 1500,
    onQemuStarted: w.onQemuStarted,
  }).catch((e: unknown) => e);
  t.match(err, { name: "HilError", message: /the guest never reached SSH within 2 s/ });
  t.match((err as { detail?: string }).detail, /last console lines|the console stayed silent/);
  for (const s of w.started) {
    t.notOk(processExists(s.pid), "QEMU is gone");
    t.ok(gone(s.workDir), "the temp dir is gone");
  }
});

t.test("a boot whose console goes silent: QEMU started once more, then one clear error", async (t) => {
  const w = watch();
  const err = await startGuest({
    qemu: artifacts.qemu,
    kernel: artifacts.kernel.bzImage,
    initrd: artifacts.initrd,
    // init sleeps without a word: the console stops after the kernel's last line
    kernelArgs: ["rdinit=/bin/busybox", "--", "sleep", "600"],
    stallMs: 4000,
    onQemuStarted: w.onQemuStarted,
  }).catch((e: unknown) => e);
  t.match(err, {
    name: "HilError",
    message: /the guest never reached SSH: the console stalled for \d+ s after: .+/,
  });
  t.equal(w.started.length, 2, "one restart after the first stall");
  for (const s of w.started) {
    t.notOk(processExists(s.pid), "QEMU is gone");
    t.ok(gone(s.workDir), "the temp dir is gone");
  }
});

t.test("an SSH port taken on the host: QEMU refuses the forward, the launcher picks another", async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const taken = (blocker.address() as AddressInfo).port;
  const w = watch();
  const guest = await startGuest({
    qemu: artifacts.qemu,
    kernel: artifacts.kernel.bzImage,
    initrd: artifacts.initrd,
    sshPort: taken,
    onQemuStarted: w.onQemuStarted,
  });
  t.equal(guest.timings.qemuStarts, 2);
  t.not(guest.sshPort, taken);
  t.equal((await guest.exec("echo ok")).stdout, "ok\n");
  await guest.dispose();
  for (const s of w.started) t.notOk(processExists(s.pid), "every QEMU started is gone");
});

t.test("SIGINT while booting: the child process exits and leaves no QEMU and no temp dir", async (t) => {
  const child = fileURLToPath(new URL("../support/launch-sigint-child.ts", import.meta.url));
  const proc = execFile(process.execPath, ["--import", "tsx", child], { env: { ...process.env } });
  let out = "";
  const started = new Promise<{ pid: number; workDir: string }>((resolve) => {
    proc.stdout?.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
  });
  const info = await started;
  t.ok(processExists(info.pid), "QEMU runs");
  await new Promise((r) => setTimeout(r, 1000));
  proc.kill("SIGINT");
  const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  t.equal(exit.signal, "SIGINT", "the child died of SIGINT, as it would without us");
  t.ok(await processGone(info.pid), "QEMU is gone");
  t.ok(gone(info.workDir), "the temp dir is gone");
});
