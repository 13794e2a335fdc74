import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { ensureQemu, inspectQemu } from "../../qemu/provision/qemu.ts";
import { isAtLeast } from "../../qemu/provision/version.ts";
import { probe } from "../../util/exec.ts";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

// HIL_QEMU would bypass what this test is about.
delete process.env.HIL_QEMU;

t.test("ensureQemu provides QEMU >= 10.1 with vfio-user-pci, then hits the cache", async (t) => {
  const first = await ensureQemu();
  t.ok(existsSync(first.binary), `binary ${first.binary} exists`);
  t.ok(isAtLeast(first.version, "10.1"), `version ${first.version} >= 10.1`);
  const caps = await inspectQemu(first.binary);
  t.ok(caps.hasVfioUser, "-device help lists vfio-user-pci");
  t.equal(caps.version, first.version);
  t.ok(first.firmwareDirs.length > 0, "firmware dirs");

  const started = Date.now();
  const second = await ensureQemu();
  const elapsedMs = Date.now() - started;
  t.same(second, first, "same install");
  t.ok(elapsedMs < 5000, `second call took ${elapsedMs} ms`);

  if (first.origin === "built") {
    const entry = dirname(dirname(dirname(first.binary)));
    const manifest = JSON.parse(readFileSync(join(entry, "manifest.json"), "utf8"));
    t.match(manifest, { origin: "built", version: first.version });
    t.ok(statSync(join(entry, ".complete")).mtimeMs < started, "nothing rebuilt");
    t.notOk(existsSync(join(entry, "src")), "the source tree is not kept");
    const dataDirs = await probe(first.binary, ["-L", "help"]);
    t.notMatch(dataDirs.stdout, /\.tmp-\d+/, "data dirs follow the renamed entry, not the build dir");
  }
});

t.test(
  "the QEMU boots SeaBIOS on q35 with host firmware, virtio-net, user net with hostfwd, shared memfd RAM",
  async (t) => {
    const qemu = await ensureQemu();
    const dir = mkdtempSync(join(tmpdir(), "hil-qemu-boot-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const biosLog = join(dir, "seabios.log");
    const port = await freePort();
    const args = [
      ...qemu.firmwareDirs.flatMap((d) => ["-L", d]),
      ...["-M", "q35", "-accel", "tcg", "-m", "256M", "-nodefaults", "-no-user-config", "-display", "none"],
      ...["-object", "memory-backend-memfd,id=ram,size=256M,share=on", "-machine", "memory-backend=ram"],
      ...[
        "-netdev",
        `user,id=n0,hostfwd=tcp:127.0.0.1:${port}-:22`,
        "-device",
        "virtio-net-pci,netdev=n0,romfile=",
      ],
      ...["-device", "virtio-net-pci"],
      ...["-chardev", `file,id=dbg,path=${biosLog}`, "-device", "isa-debugcon,iobase=0x402,chardev=dbg"],
    ];
    const child = spawn(qemu.binary, args, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    t.teardown(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });

    let log = "";
    for (let waited = 0; waited < 30_000 && child.exitCode === null; waited += 200) {
      await sleep(200);
      log = existsSync(biosLog) ? readFileSync(biosLog, "utf8") : "";
      if (/No bootable device|Booting from/.test(log)) break;
    }
    t.equal(child.exitCode, null, `QEMU still running (stderr: ${stderr.trim()})`);
    t.match(log, /SeaBIOS \(version/, "SeaBIOS ran");
    t.match(log, /No bootable device|Booting from/, "SeaBIOS reached the boot menu");
  },
);
