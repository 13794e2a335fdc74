import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import t from "tap";
import type { QemuInstall } from "../../qemu/launch/types.ts";
import { applySourceFixups, QEMU_DEVICES, qemuBuildKey } from "../../qemu/provision/build.ts";
import { parseDeviceNames } from "../../qemu/provision/device-help.ts";
import { downloadVerified } from "../../qemu/provision/download.ts";
import { type BuiltQemuManifest, readManifest, writeManifest } from "../../qemu/provision/manifest.ts";
import { parseNinjaProgress } from "../../qemu/provision/ninja-progress.ts";
import { ensureQemu, inspectQemu } from "../../qemu/provision/qemu.ts";
import { qemuShortcomings } from "../../qemu/provision/requirements.ts";
import { findOnPath, type QemuProviders, resolveQemu } from "../../qemu/provision/resolve.ts";
import { QEMU_SOURCE, qemuSourceUrl } from "../../qemu/provision/source.ts";
import {
  compareVersions,
  isAtLeast,
  parseQemuVersionOutput,
  parseVersion,
} from "../../qemu/provision/version.ts";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";
import { tempDir } from "../support/temp-dir.ts";

/** A stand-in executable that answers `--version` and `-device help` like a QEMU would. */
function fakeQemu(dir: string, version: string, devices: string[], name = "qemu-system-x86_64"): string {
  const path = join(dir, name);
  const deviceLines = devices.map((d) => `name "${d}", bus PCI`).join("\\n");
  writeFileSync(
    path,
    `#!/bin/sh\ncase "$1" in\n  --version) echo "QEMU emulator version ${version} (fake)";;\n  -device) printf 'Network devices:\\n${deviceLines}\\n';;\n  *) exit 1;;\nesac\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

t.test("version parsing and the >= 10.1 comparison", async (t) => {
  t.equal(parseQemuVersionOutput("QEMU emulator version 10.2.2 (Debian 1:10.2.2+ds-1)\nCopyright"), "10.2.2");
  t.equal(parseQemuVersionOutput("QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u18)"), "7.2.19");
  t.equal(parseQemuVersionOutput("QEMU emulator version 10.1.50 (v10.1.0-1234-gdeadbeef)"), "10.1.50");
  t.equal(parseQemuVersionOutput("bash: qemu: not found"), undefined);
  t.same(parseVersion("10.1"), [10, 1, 0]);
  t.equal(parseVersion("10.x"), undefined);
  t.equal(compareVersions([10, 1, 0], [10, 0, 9]), 1);
  t.equal(compareVersions([9, 9, 9], [10, 0, 0]), -1);
  t.equal(compareVersions([10, 1, 0], [10, 1, 0]), 0);
  t.ok(isAtLeast("10.1.0", "10.1"));
  t.ok(isAtLeast("10.2.2", "10.1"));
  t.ok(isAtLeast("11.0.0", "10.1"));
  t.notOk(isAtLeast("10.0.5", "10.1"));
  t.notOk(isAtLeast("7.2.0", "10.1"));
  t.notOk(isAtLeast("unknown", "10.1"));
});

t.test("-device help is parsed by device name, not by description", async (t) => {
  const help = [
    "Network devices:",
    'name "e1000", bus PCI, alias "e1000-82540em", desc "Intel Gigabit Ethernet"',
    'name "virtio-net-pci", bus PCI, alias "virtio-net"',
    "",
    "Misc devices:",
    'name "vfio-pci", bus PCI, desc "VFIO-based PCI device assignment"',
    'name "vfio-user-pci", bus PCI, desc "VFIO over socket PCI device assignment"',
  ].join("\n");
  const names = parseDeviceNames(help);
  t.ok(names.has("vfio-user-pci"));
  t.ok(names.has("virtio-net-pci"));
  t.notOk(names.has("virtio-net"), "aliases are not names");
  t.notOk(parseDeviceNames('name "vfio-pci", bus PCI, desc "not vfio-user-pci"').has("vfio-user-pci"));
});

t.test("shortcomings name what a QEMU lacks", async (t) => {
  t.same(qemuShortcomings({ version: "10.2.2", hasVfioUser: true }), []);
  t.same(qemuShortcomings({ version: "7.2.0", hasVfioUser: false }), [
    "it is version 7.2.0, older than 10.1",
    "it lacks the vfio-user-pci device",
  ]);
  t.same(qemuShortcomings({ version: "unknown", hasVfioUser: true }), ["its version could not be read"]);
});

t.test("ninja progress lines", async (t) => {
  t.same(parseNinjaProgress("[347/2605] Compiling C object libqemuutil.a.p/util_osdep.c.o"), {
    done: 347,
    total: 2605,
  });
  t.same(parseNinjaProgress("[2605/2605] Linking target qemu-system-x86_64"), { done: 2605, total: 2605 });
  t.equal(parseNinjaProgress("ninja: Entering directory `build'"), undefined);
  t.equal(parseNinjaProgress("../hw/foo.c:12: warning: [1/2] not a status"), undefined);
  t.equal(parseNinjaProgress("[0/0] nothing"), undefined);
});

t.test("source URL follows HIL_DEBIAN_MIRROR", async (t) => {
  t.equal(qemuSourceUrl({}), "http://deb.debian.org/debian/pool/main/q/qemu/qemu_10.2.2+ds.orig.tar.xz");
  t.equal(
    qemuSourceUrl({ HIL_DEBIAN_MIRROR: "http://mirror.example/debian/" }),
    "http://mirror.example/debian/pool/main/q/qemu/qemu_10.2.2+ds.orig.tar.xz",
  );
});

t.test("the build key is a content hash of the recipe", async (t) => {
  t.match(qemuBuildKey(), /^[0-9a-f]{64}$/);
  t.equal(qemuBuildKey(), qemuBuildKey());
});

function providers(caps: Record<string, { version: string; hasVfioUser: boolean }>, built: QemuInstall) {
  const calls = { inspected: [] as string[], builds: 0 };
  const p: QemuProviders = {
    inspect: async (binary) => {
      calls.inspected.push(binary);
      const c = caps[binary];
      if (!c) throw new HilError(`QEMU ${binary} could not be run`);
      return c;
    },
    build: async () => {
      calls.builds++;
      return built;
    },
  };
  return { p, calls };
}

const BUILT: QemuInstall = {
  binary: "/cache/qemu/x/prefix/bin/qemu-system-x86_64",
  version: "10.2.2",
  origin: "built",
  firmwareDirs: [],
};

t.test("decision order", async (t) => {
  const dir = tempDir(t, "hil-qemu-order-");
  const old = fakeQemu(dir, "7.2.0", ["virtio-net-pci"]);

  await t.test("an unusable $HIL_QEMU is an error naming it, with no fallback", async (t) => {
    const { p, calls } = providers({ "/opt/q/qemu": { version: "10.0.0", hasVfioUser: false } }, BUILT);
    await t.rejects(resolveQemu({ HIL_QEMU: "/opt/q/qemu", PATH: dir }, p), {
      name: "HilError",
      message: /\/opt\/q\/qemu.*10\.0\.0.*vfio-user-pci/,
    });
    t.equal(calls.builds, 0);
  });

  await t.test("a $HIL_QEMU that cannot run is an error naming it", async (t) => {
    const { p } = providers({}, BUILT);
    await t.rejects(resolveQemu({ HIL_QEMU: "/nonexistent/qemu" }, p), { message: /\/nonexistent\/qemu/ });
  });

  await t.test("a good $HIL_QEMU wins over PATH", async (t) => {
    const { p, calls } = providers({ "/opt/q/qemu": { version: "10.1.0", hasVfioUser: true } }, BUILT);
    const q = await resolveQemu({ HIL_QEMU: "/opt/q/qemu", PATH: dir }, p);
    t.match(q, { binary: "/opt/q/qemu", version: "10.1.0", origin: "HIL_QEMU" });
    t.same(calls.inspected, ["/opt/q/qemu"]);
  });

  await t.test("a too old QEMU on PATH leads to a build", async (t) => {
    const { p, calls } = providers({ [old]: { version: "7.2.0", hasVfioUser: false } }, BUILT);
    t.equal(await resolveQemu({ PATH: `/nonexistent:${dir}` }, p), BUILT);
    t.same(calls.inspected, [old]);
    t.equal(calls.builds, 1);
  });

  await t.test("why a QEMU on PATH is passed over is said only when a build follows", async (t) => {
    const said: string[] = [];
    const info = progress.info;
    progress.info = (text: string) => void said.push(text);
    t.teardown(() => {
      progress.info = info;
    });
    const cached = providers({ [old]: { version: "7.2.0", hasVfioUser: false } }, BUILT);
    t.equal(await resolveQemu({ PATH: dir }, { ...cached.p, built: async () => BUILT }), BUILT);
    t.equal(cached.calls.builds, 0, "the cached build is used");
    t.same(said, [], "nothing to explain with a build in the cache");
    const cold = providers({ [old]: { version: "7.2.0", hasVfioUser: false } }, BUILT);
    t.equal(await resolveQemu({ PATH: dir }, { ...cold.p, built: async () => undefined }), BUILT);
    t.equal(cold.calls.builds, 1);
    t.match(said, [/\[qemu\] not using .*7\.2\.0/], "the reason for the build is said");
  });

  await t.test("a new QEMU on PATH without vfio-user-pci leads to a build", async (t) => {
    const { p, calls } = providers({ [old]: { version: "10.2.0", hasVfioUser: false } }, BUILT);
    t.equal(await resolveQemu({ PATH: dir }, p), BUILT);
    t.equal(calls.builds, 1);
  });

  await t.test("a good QEMU on PATH is used", async (t) => {
    const { p, calls } = providers({ [old]: { version: "10.2.2", hasVfioUser: true } }, BUILT);
    t.match(await resolveQemu({ PATH: dir }, p), { binary: old, origin: "PATH", version: "10.2.2" });
    t.equal(calls.builds, 0);
  });

  await t.test("no QEMU anywhere leads to a build", async (t) => {
    const { p, calls } = providers({}, BUILT);
    t.equal(await resolveQemu({ PATH: "/nonexistent" }, p), BUILT);
    t.same(calls.inspected, []);
  });

  t.equal(findOnPath("qemu-system-x86_64", `:/nonexistent:${dir}`), old);
  t.equal(findOnPath("qemu-system-x86_64", undefined), undefined);
});

t.test("a real binary lacking vfio-user-pci, named by HIL_QEMU", async (t) => {
  const dir = tempDir(t, "hil-qemu-fake-");
  const old = fakeQemu(dir, "7.2.0", ["virtio-net-pci", "vfio-pci"]);
  const saved = process.env.HIL_QEMU;
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_QEMU;
    else process.env.HIL_QEMU = saved;
  });

  t.same(await inspectQemu(old), { version: "7.2.0", hasVfioUser: false });
  process.env.HIL_QEMU = old;
  const err = await ensureQemu().then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof HilError);
  t.match((err as HilError).message, old);
  t.match((err as HilError).message, "vfio-user-pci");
  t.match((err as HilError).message, "7.2.0");

  const good = fakeQemu(dir, "10.2.2", ["virtio-net-pci", "vfio-user-pci"], "qemu-good");
  process.env.HIL_QEMU = good;
  t.match(await ensureQemu(), { binary: good, version: "10.2.2", origin: "HIL_QEMU" });

  await t.rejects(inspectQemu(join(dir, "missing")), { name: "HilError", message: /could not be run/ });
});

t.test("downloads are verified and leave no partial file", async (t) => {
  const body = Buffer.from("qemu source bytes\n");
  const server = createServer((req, res) => {
    if (req.url === "/missing") {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader("content-length", body.length);
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = tempDir(t, "hil-qemu-dl-");
  const sha256 = "0".repeat(64);
  const good = createHash("sha256").update(body).digest("hex");

  await t.rejects(downloadVerified(`${base}/file`, join(dir, "bad"), { sha256 }, "bad"), {
    name: "HilError",
    message: /wrong checksum/,
  });
  await t.rejects(downloadVerified(`${base}/file`, join(dir, "short"), { sha256: good, size: 99 }, "short"), {
    message: /18 bytes, expected 99/,
  });
  await t.rejects(downloadVerified(`${base}/missing`, join(dir, "gone"), { sha256: good }, "gone"), {
    message: /HTTP 404/,
  });
  await t.rejects(
    downloadVerified("http://127.0.0.1:1/x", join(dir, "refused"), { sha256: good }, "refused"),
    {
      message: /cannot download/,
    },
  );
  t.same(readdirSync(dir), [], "no file and no .part left behind");

  await downloadVerified(`${base}/file`, join(dir, "ok"), { sha256: good, size: body.length }, "ok");
  t.same(readFileSync(join(dir, "ok")), body);
  t.same(readdirSync(dir), ["ok"]);
});

t.test("source fixups apply exactly once or fail clearly", async (t) => {
  const dir = tempDir(t, "hil-qemu-fix-");
  writeFileSync(join(dir, "meson.build"), "x\n    unpack_edk2_blobs = bzip2.found()\n    break\n");
  const devices = join(dir, "configs", "devices", "i386-softmmu", "default.mak");
  mkdirSync(dirname(devices), { recursive: true });
  writeFileSync(devices, "#CONFIG_VTD=n\n\n# Boards are selected by default, uncomment to keep out\n");
  mkdirSync(join(dir, "hw", "cxl"), { recursive: true });
  writeFileSync(join(dir, "hw", "cxl", "cxl-host-stubs.c"), "void cxl_fmws_update_mmio(void) {};\n");
  await applySourceFixups(dir);
  t.equal(readFileSync(join(dir, "meson.build"), "utf8"), "x\n    unpack_edk2_blobs = false\n    break\n");
  const mak = readFileSync(devices, "utf8");
  for (const d of QEMU_DEVICES) t.match(mak, new RegExp(`^CONFIG_${d}=y$`, "m"), `${d} switched on`);
  t.ok(mak.endsWith("# Boards are selected by default, uncomment to keep out\n"), "the rest kept");
  t.match(
    readFileSync(join(dir, "hw", "cxl", "cxl-host-stubs.c"), "utf8"),
    /^GSList \*cxl_fmws_get_all_sorted\(void\) \{ return NULL; \}$/m,
    "the missing CXL stub added",
  );
  await t.rejects(applySourceFixups(dir), { name: "HilError", message: /does not match the build recipe/ });
});

t.test("the build manifest round-trips and rejects garbage", async (t) => {
  const dir = tempDir(t, "hil-qemu-manifest-");
  const manifest: BuiltQemuManifest = {
    recipe: "r",
    origin: "built",
    version: "10.2.2",
    binary: "prefix/bin/qemu-system-x86_64",
    source: { url: "u", sha256: QEMU_SOURCE.sha256, debianVersion: QEMU_SOURCE.debianVersion },
    configureFlags: ["--x"],
    builtAt: "2026-01-01T00:00:00.000Z",
    buildSeconds: 1,
  };
  await writeManifest(dir, manifest);
  t.same(await readManifest(dir), manifest);
  writeFileSync(join(dir, "manifest.json"), '{"origin":"PATH"}');
  await t.rejects(readManifest(dir), { name: "HilError", message: /malformed/ });
  writeFileSync(join(dir, "manifest.json"), "{");
  await t.rejects(readManifest(dir), { name: "HilError", message: /cannot read/ });
});
