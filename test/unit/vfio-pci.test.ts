// --device-pci's host side (qemu/launch/vfio-pci.ts) against a fake sysfs and procfs
// (test/support/fake-sysfs.ts): the PCI address normalised or refused, a host without an IOMMU,
// a group shared with a device on a DMA driver (named with its driver), a function another
// process holds, a bind to vfio-pci and its release restoring the driver and driver_override,
// the release after a failure midway and after a signal, and QEMU's arguments.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, readlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import { bindVfioPci, checkPassthrough, parseBdf, vfioPciArgs } from "../../qemu/launch/vfio-pci.ts";
import { HilError } from "../../util/errors.ts";
import { type FakeFunction, type FakeHostOptions, fakeHost } from "../support/fake-sysfs.ts";

const ERDMA: FakeFunction = { bdf: "0000:03:00.0", ids: "1ded:107f", driver: "erdma", group: "7" };
let hosts = 0;
const testdirs = new WeakMap<Test, string>();
/**
 * A fake host in a directory of its own: a test's testdir is one directory, made afresh each time
 * it is asked for, so it is asked for once per test.
 */
const host = (t: Test, opts: Partial<FakeHostOptions> = {}) => {
  const root = testdirs.get(t) ?? t.testdir({});
  testdirs.set(t, root);
  const dir = join(root, `host-${++hosts}`);
  mkdirSync(dir);
  return fakeHost(dir, { functions: [ERDMA], ...opts });
};

function hilError(t: Test, fn: () => unknown, pattern: RegExp, what: string): HilError | undefined {
  try {
    fn();
  } catch (err) {
    t.ok(err instanceof HilError, `${what}: a HilError`);
    const text = (err as HilError).format();
    t.match(text, pattern, what);
    return err as HilError;
  }
  t.fail(`${what}: no error`);
  return undefined;
}

async function hilErrorAsync(t: Test, p: Promise<unknown>, pattern: RegExp, what: string) {
  try {
    await p;
  } catch (err) {
    t.ok(err instanceof HilError, `${what}: a HilError`);
    t.match((err as HilError).format(), pattern, what);
    return err as HilError;
  }
  t.fail(`${what}: no error`);
  return undefined;
}

t.test("a PCI address is normalised to domain:bus:device.function, lower case", async (t) => {
  t.equal(parseBdf("0000:03:00.0"), "0000:03:00.0");
  t.equal(parseBdf("03:00.0"), "0000:03:00.0", "domain 0000 when absent");
  t.equal(parseBdf(" 0001:AF:1f.7 "), "0001:af:1f.7");
  for (const bad of ["3:00.0", "03:00", "0000:03:00.8", "03:20.0", "00:03:00.0", "pci:03:00.0", ""])
    hilError(t, () => parseBdf(bad), new RegExp(`--device-pci.*got "${bad.replace(".", "\\.")}"`), bad);
});

t.test("a function that is not there, and a host without an IOMMU", async (t) => {
  const h = host(t, { functions: [{ ...ERDMA, group: undefined }] });
  hilError(
    t,
    () => checkPassthrough(h, "0000:04:00.0"),
    /--device-pci 0000:04:00.0: no such PCI function/,
    "absent",
  );
  hilError(
    t,
    () => checkPassthrough(h, "0000:03:00.0"),
    /0000:03:00.0: has no IOMMU group: the IOMMU is off.*intel_iommu=on.*amd_iommu.*intel-iommu,caching-mode=on/s,
    "no IOMMU",
  );
  t.same(h.writes, [], "nothing was written");
  t.equal(h.driverOf("0000:03:00.0"), "erdma");
});

t.test(
  "a group shared with a function on a DMA driver is not viable; bridges, unbound and vfio-pci ones are",
  async (t) => {
    const h = host(t, {
      functions: [
        ERDMA,
        { bdf: "0000:03:00.1", ids: "8086:10fb", driver: "ixgbe", group: "7" },
        { bdf: "0000:00:1c.0", ids: "8086:a110", driver: "pcieport", group: "7", pciClass: "0x060400" },
        { bdf: "0000:03:00.2", ids: "8086:10fb", group: "7" },
        { bdf: "0000:03:00.3", ids: "8086:10fb", driver: "vfio-pci", group: "7" },
      ],
    });
    const err = hilError(
      t,
      () => checkPassthrough(h, "0000:03:00.0"),
      /IOMMU group 7 is not viable: 0000:03:00.1 \(8086:10fb, driver ixgbe\) shares it/,
      "names the device and its driver",
    );
    t.notMatch(err?.message ?? "", /00:1c.0|03:00.2|03:00.3/, "only the blocking function is named");
    t.same(h.writes, [], "nothing was written");
    await hilErrorAsync(t, bindVfioPci(h, "0000:03:00.0"), /not viable/, "bind refuses it too");
    t.same(h.writes, [], "still nothing written");
    t.equal(h.driverOf("0000:03:00.0"), "erdma");
  },
);

t.test("with the other function unbound the same group is viable", async (t) => {
  const h = host(t, {
    functions: [
      ERDMA,
      { bdf: "0000:00:1c.0", ids: "8086:a110", driver: "pcieport", group: "7", pciClass: "0x060400" },
      { bdf: "0000:03:00.2", ids: "8086:10fb", group: "7" },
      { bdf: "0000:03:00.3", ids: "8086:10fb", driver: "vfio-pci", group: "7" },
    ],
  });
  const c = checkPassthrough(h, "0000:03:00.0");
  t.equal(c.group, "7");
  t.same(
    c.peers.map((p) => p.bdf),
    ["0000:00:1c.0", "0000:03:00.2", "0000:03:00.3"],
  );
  t.same(c.device, { bdf: "0000:03:00.0", ids: "1ded:107f", driver: "erdma", pciClass: 0x020000 });
});

t.test("a function in use: its vfio group held by another process, or its verbs device open", async (t) => {
  const onVfio = host(t, {
    functions: [{ ...ERDMA, driver: "vfio-pci" }],
    processes: [
      { pid: 4242, comm: "qemu-system-x86", open: ["/dev/null", "/dev/vfio/vfio", "/dev/vfio/7"] },
      { pid: 17, comm: "sshd", open: ["/dev/null"] },
    ],
  });
  hilError(
    t,
    () => checkPassthrough(onVfio, "0000:03:00.0"),
    /0000:03:00.0: is in use: .*pid 4242 \(qemu-system-x86\) holds \/dev\/vfio\/7 open/,
    "vfio group open",
  );
  await hilErrorAsync(t, bindVfioPci(onVfio, "0000:03:00.0"), /is in use/, "bind refuses it");
  t.same(onVfio.writes, []);

  const verbs = host(t, {
    functions: [{ ...ERDMA, verbs: ["uverbs0"] }],
    processes: [{ pid: 99, comm: "ib_write_bw", open: ["/dev/infiniband/uverbs0"] }],
  });
  hilError(
    t,
    () => checkPassthrough(verbs, "0000:03:00.0"),
    /is in use: pid 99 \(ib_write_bw\) has its RDMA device \(\/dev\/infiniband\/uverbs0\) open on driver erdma/,
    "verbs device open",
  );

  const idle = host(t, {
    functions: [{ ...ERDMA, verbs: ["uverbs0"] }],
    processes: [{ pid: 99, comm: "ib_write_bw", open: ["/dev/infiniband/uverbs1"] }],
  });
  t.equal(checkPassthrough(idle, "0000:03:00.0").group, "7", "another verbs device's user does not count");
});

t.test("bind: driver_override, unbind, drivers_probe; release gives it back", async (t) => {
  const h = host(t);
  const b = await bindVfioPci(h, "0000:03:00.0");
  t.same(h.modprobed, ["vfio-pci"], "vfio-pci was not loaded: modprobe first");
  t.equal(h.driverOf("0000:03:00.0"), "vfio-pci");
  t.equal(h.overrideOf("0000:03:00.0"), "vfio-pci");
  t.equal(b.originalDriver, "erdma");
  t.equal(b.group, "7");
  t.same(b.qemuArgs, ["-device", '{"driver":"vfio-pci","host":"0000:03:00.0"}']);
  t.same(h.writes, [
    'bus/pci/devices/0000:03:00.0/driver_override <- "vfio-pci"',
    'bus/pci/devices/0000:03:00.0/driver/unbind <- "0000:03:00.0"',
    'bus/pci/drivers_probe <- "0000:03:00.0"',
  ]);
  h.writes.length = 0;
  t.same(b.release(), [], "released cleanly");
  t.equal(h.driverOf("0000:03:00.0"), "erdma", "back on its driver");
  t.equal(h.overrideOf("0000:03:00.0"), "(null)", "driver_override cleared");
  t.same(h.writes, [
    'bus/pci/devices/0000:03:00.0/driver/unbind <- "0000:03:00.0"',
    'bus/pci/devices/0000:03:00.0/driver_override <- "\\n"',
    'bus/pci/drivers_probe <- "0000:03:00.0"',
  ]);
  h.writes.length = 0;
  t.same(b.release(), [], "a second release does nothing");
  t.same(h.writes, []);
  // a second bind finds vfio-pci loaded
  const again = await bindVfioPci(h, "0000:03:00.0");
  t.same(h.modprobed, ["vfio-pci"], "no second modprobe");
  again.release();
  t.equal(h.driverOf("0000:03:00.0"), "erdma");
});

t.test("bind keeps an override it found, and an unbound function stays unbound", async (t) => {
  const h = host(t, {
    functions: [{ ...ERDMA, driver: undefined, native: "erdma" }],
    drivers: ["erdma", "vfio-pci"],
  });
  const b = await bindVfioPci(h, parseBdf("03:00.0"));
  t.equal(h.driverOf("0000:03:00.0"), "vfio-pci");
  t.same(h.modprobed, [], "vfio-pci was loaded");
  t.notOk(
    h.writes.some((w) => w.includes("unbind")),
    "nothing to unbind",
  );
  t.same(b.release(), []);
  t.equal(h.driverOf("0000:03:00.0"), undefined, "no driver before, none after");
  t.equal(h.overrideOf("0000:03:00.0"), "(null)");
});

t.test("a function already on vfio-pci and free is used as it is and left so", async (t) => {
  const h = host(t, { functions: [{ ...ERDMA, driver: "vfio-pci", native: "erdma" }] });
  const b = await bindVfioPci(h, "0000:03:00.0");
  t.same(h.writes, [], "no write");
  t.same(b.release(), []);
  t.same(h.writes, [], "release writes nothing either");
  t.equal(h.driverOf("0000:03:00.0"), "vfio-pci");
});

t.test("a failure midway gives the function back before the error", async (t) => {
  const refused = host(t, { drivers: ["vfio-pci"] });
  refused.refuseVfioProbe(true);
  await hilErrorAsync(
    t,
    bindVfioPci(refused, "0000:03:00.0"),
    /0000:03:00.0: did not bind to vfio-pci \(its driver is none after drivers_probe/,
    "vfio-pci does not take it",
  );
  t.equal(refused.driverOf("0000:03:00.0"), "erdma", "back on erdma");
  t.equal(refused.overrideOf("0000:03:00.0"), "(null)", "override cleared");

  const denied = host(t, { drivers: ["vfio-pci"] });
  denied.failWrites("driver/unbind", "EACCES");
  await hilErrorAsync(
    t,
    bindVfioPci(denied, "0000:03:00.0"),
    /writing "0000:03:00.0" to .*driver\/unbind failed: EACCES \(binding a PCI function to vfio-pci needs root\)/,
    "unbind denied",
  );
  t.equal(denied.driverOf("0000:03:00.0"), "erdma", "still on erdma");
  t.equal(denied.overrideOf("0000:03:00.0"), "(null)", "the override written before is cleared");

  const noModule = host(t, { noVfioModule: true });
  await hilErrorAsync(t, bindVfioPci(noModule, "0000:03:00.0"), /without CONFIG_VFIO_PCI/, "no vfio-pci");
  t.same(noModule.writes, [], "nothing written without vfio-pci");
});

t.test(
  "release reports what it could not restore, and binds by name when drivers_probe does not",
  async (t) => {
    const h = host(t, { drivers: ["vfio-pci"] });
    const b = await bindVfioPci(h, "0000:03:00.0");
    h.failWrites("drivers_probe", "EIO");
    const problems = b.release();
    t.equal(h.driverOf("0000:03:00.0"), "erdma", "erdma/bind took it back");
    t.match(problems, [/writing "0000:03:00.0" to .*drivers_probe: EIO/]);
    t.ok(h.writes.includes('bus/pci/drivers/erdma/bind <- "0000:03:00.0"'));

    const stuck = host(t, { drivers: ["vfio-pci"] });
    const s = await bindVfioPci(stuck, "0000:03:00.0");
    stuck.failWrites("driver/unbind", "EBUSY");
    const left = s.release();
    t.match(left, [/driver\/unbind: EBUSY/, /0000:03:00.0 is on vfio-pci, not back on erdma/]);
    t.same(s.release(), [], "released once only");
  },
);

t.test("QEMU's arguments", async (t) => {
  t.same(vfioPciArgs("0000:03:00.0"), ["-device", '{"driver":"vfio-pci","host":"0000:03:00.0"}']);
  t.same(vfioPciArgs("0000:03:00.0", "erdma0"), [
    "-device",
    '{"driver":"vfio-pci","id":"erdma0","host":"0000:03:00.0"}',
  ]);
});

t.test("SIGTERM after the bind: the exit hook gives the function back", async (t) => {
  const root = t.testdir({});
  const child = fileURLToPath(new URL("../support/vfio-pci-child.ts", import.meta.url));
  const proc = execFile(process.execPath, ["--import", "tsx", child, root]);
  let out = "";
  await new Promise<void>((resolve, reject) => {
    proc.stdout?.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve();
    });
    proc.on("exit", () => reject(new Error(`the child exited first: ${out}`)));
  });
  t.equal(out.trim(), "bound vfio-pci");
  const driver = join(root, "sys/bus/pci/devices/0000:03:00.0/driver");
  t.equal(basename(readlinkSync(driver)), "vfio-pci", "bound while the child runs");
  const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.on("exit", (_c, s) => resolve(s)));
  proc.kill("SIGTERM");
  t.equal(await exited, "SIGTERM", "the child died of the signal");
  t.equal(basename(readlinkSync(driver)), "erdma", "back on erdma");
  t.equal(
    readFileSync(join(root, "sys/bus/pci/devices/0000:03:00.0/driver_override"), "utf8").trim(),
    "(null)",
  );
});
