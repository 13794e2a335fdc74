import { execFile } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import { type StartGuestOptions, startGuest } from "../../qemu/launch/guest.ts";
import { bootArtifacts, gone, processExists, processGone } from "../support/guest.ts";

t.setTimeout(60 * 60 * 1000);

const artifacts = await bootArtifacts();

/** startGuest on the test's artifacts with `opts`: the guest (a promise) and every QEMU it started. */
function startWatched(opts: Omit<StartGuestOptions, "qemu" | "kernel" | "initrd" | "onQemuStarted">) {
  const started: Array<{ pid: number; workDir: string }> = [];
  const guest = startGuest({
    qemu: artifacts.qemu,
    kernel: artifacts.kernel.bzImage,
    initrd: artifacts.initrd,
    ...opts,
    onQemuStarted: (info) => started.push(info),
  });
  return { started, guest };
}

/** Every QEMU a failed start ran is gone, and its temp dir with it. */
function expectAllGone(t: Test, started: ReadonlyArray<{ pid: number; workDir: string }>) {
  for (const s of started) {
    t.notOk(processExists(s.pid), "QEMU is gone");
    t.ok(gone(s.workDir), "the temp dir is gone");
  }
}

t.test("a guest whose init does not exist: HilError with the console tail, nothing left", async (t) => {
  const w = startWatched({ kernelArgs: ["rdinit=/no/such/init", "init=/no/such/init"] });
  const err = await w.guest.catch((e: unknown) => e);
  t.match(err, { name: "HilError", message: /the guest never reached SSH/ });
  t.match(
    (err as { detail?: string }).detail,
    /last console lines:[\s\S]*(No working init found|Kernel panic)/,
  );
  t.equal(w.started.length, 1);
  expectAllGone(t, w.started);
});

t.test("a boot timeout too short for any boot: HilError, QEMU killed, temp dir gone", async (t) => {
  const w = startWatched({ bootTimeoutMs: 1500 });
  const err = await w.guest.catch((e: unknown) => e);
  t.match(err, { name: "HilError", message: /the guest never reached SSH within 2 s/ });
  t.match((err as { detail?: string }).detail, /last console lines|the console stayed silent/);
  expectAllGone(t, w.started);
});

t.test("a boot whose console goes silent: QEMU started once more, then one clear error", async (t) => {
  const w = startWatched({
    // init sleeps without a word: the console stops after the kernel's last line
    kernelArgs: ["rdinit=/bin/busybox", "--", "sleep", "600"],
    stallMs: 4000,
  });
  const err = await w.guest.catch((e: unknown) => e);
  t.match(err, {
    name: "HilError",
    message: /the guest never reached SSH: the console stalled for \d+ s after: .+/,
  });
  t.equal(w.started.length, 2, "one restart after the first stall");
  expectAllGone(t, w.started);
});

t.test("an SSH port taken on the host: QEMU refuses the forward, the launcher picks another", async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const taken = (blocker.address() as AddressInfo).port;
  const w = startWatched({ sshPort: taken });
  const guest = await w.guest;
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
