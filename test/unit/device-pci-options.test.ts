// --device-pci above the host side (which vfio-pci.test.ts tests): the options it contradicts,
// its checks made before anything is built (against a fake sysfs), what boot, the record, the
// smoke checks and a rerun get of it, the suite's fault scenarios as SKIPs on a real device, a
// boot that fails after the bind giving the function back, and the CLI refusing a bad address.
import { readFileSync, readlinkSync } from "node:fs";
import { basename, join } from "node:path";
import t from "tap";
import { passthroughFaultReason } from "../../harness/backend/pci-passthrough.ts";
import { bootDevice, recordedDevice, smokeDevice } from "../../harness/backend/registry.ts";
import { bootPrepared, type PreparedGuest } from "../../harness/boot.ts";
import { type DeviceOptionValues, deviceOptions } from "../../harness/cli/device-options.ts";
import { rerunScenario } from "../../harness/report/rerun.ts";
import { describeDevice, deviceOf, type RunDir } from "../../harness/rundir/read.ts";
import { type RunScenario, runRecordSchema } from "../../harness/rundir/schema.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { runFaultyOn } from "../support/fake-suite.ts";
import { fakeHost } from "../support/fake-sysfs.ts";

const values = (v: Partial<DeviceOptionValues>): DeviceOptionValues => ({ device: true, ...v });
const ERDMA = { bdf: "0000:03:00.0", ids: "1ded:107f", driver: "erdma", group: "7" };

t.test("--device-pci: a function that can be passed through is the device", async (t) => {
  const host = fakeHost(t.testdir({}), { functions: [ERDMA] });
  const chosen = deviceOptions(values({ devicePci: "03:00.0", mac: "00:16:3e:01:02:03" }), { host });
  t.same(chosen, { kind: "pci", bdf: "0000:03:00.0", mac: "00:16:3e:01:02:03" });
  t.same(host.writes, [], "checked, not bound: nothing is bound before the boot");
  t.same(bootDevice(chosen), { pci: "0000:03:00.0" });
  const recorded = recordedDevice(chosen, "hw-trace.jsonl");
  t.same(recorded, { pci: "0000:03:00.0", mac: "00:16:3e:01:02:03" });
  t.same(smokeDevice(chosen, "/x/hw.jsonl"), {
    external: "host PCI function 0000:03:00.0 (vfio-pci)",
    mac: "00:16:3e:01:02:03",
  });
  // verdicts.json takes it, and the reports read it back
  const parsed = runRecordSchema.safeParse({ kernel: "debian:6.12", results: [], device: recorded });
  t.ok(parsed.success, parsed.success ? "" : JSON.stringify(parsed.error.issues));
  const record = runRecordSchema.parse({
    kernel: "debian:6.12",
    results: [],
    device: recorded,
    job: {
      baseDir: "/w",
      spec: { kernel: "debian:6.12", driver: "erdma", executor: "kernel", scenarios: "x" },
    },
    scenarios: [
      { name: "x", file: "x.yaml", judgements: [{ profile: "linux", verdict: "PASS", rules: [] }] },
    ],
  });
  const run: RunDir = { dir: "/runs/x", record, finishedAt: new Date(0) };
  t.same(deviceOf(run), { kind: "pci", bdf: "0000:03:00.0" });
  t.equal(describeDevice({ kind: "pci", bdf: "0000:03:00.0" }), "host PCI function 0000:03:00.0");
  const rerun = rerunScenario(run, record.scenarios?.[0] as RunScenario);
  t.match(rerun.line, /--device-pci 0000:03:00.0 --mac 00:16:3e:01:02:03/, "a rerun passes it through again");
  t.notMatch(rerun.line, /--device-profile|--device-socket/);
});

t.test("--device-pci: a bad address, the options it contradicts, a group that is not viable", async (t) => {
  const dir = t.testdir({ shared: {}, alone: {} });
  const host = fakeHost(join(dir, "shared"), {
    functions: [ERDMA, { bdf: "0000:03:00.1", ids: "8086:10fb", driver: "ixgbe", group: "7" }],
  });
  t.throws(() => deviceOptions(values({ devicePci: "3:0.0" }), { host }), {
    message: /--device-pci takes a PCI address like 0000:03:00.0 or 03:00.0.*got "3:0.0"/,
  });
  const ok = fakeHost(join(dir, "alone"), { functions: [ERDMA] });
  const cases: Array<[Partial<DeviceOptionValues>, object, RegExp]> = [
    [{ deviceSocket: "/s" }, {}, /--device-pci and --device-socket each attach a device/],
    [{ device: false }, {}, /--device-pci and --no-device contradict each other/],
    [{ deviceProfile: "erdma-2022" }, {}, /the real device of --device-pci has its own/],
    [{}, { traceFile: "/x/hw.jsonl" }, /a real device passed through has none/],
    [{}, { driver: "siw" }, /--driver siw runs soft-iWARP without a device; --device-pci attaches one/],
  ];
  for (const [v, extra, message] of cases) {
    t.throws(() => deviceOptions(values({ devicePci: "03:00.0", ...v }), { host: ok, ...extra }), {
      message,
    });
  }
  t.throws(() => deviceOptions(values({ devicePci: "03:00.0" }), { host }), {
    message: /IOMMU group 7 is not viable: 0000:03:00.1 \(8086:10fb, driver ixgbe\)/,
  });
});

t.test(
  "the suite on a passed-through function: fault scenarios are SKIP before any guest boots",
  async (t) => {
    const device = { kind: "pci", bdf: "0000:03:00.0", mac: "52:54:00:12:34:56" } as const;
    const report = await runFaultyOn(device, t.testdir({}));
    t.equal(report.boots, 0, "no guest booted");
    t.same(report.scenarios[0]?.outcome, { verdict: "SKIP", reason: passthroughFaultReason("0000:03:00.0") });
    t.match(passthroughFaultReason("0000:03:00.0"), /^no control channel: the device is real/);
  },
);

t.test("a boot that fails after the bind gives the function back", async (t) => {
  const root = t.testdir({});
  const host = fakeHost(root, { functions: [ERDMA], drivers: ["vfio-pci"] });
  const prepared = {
    qemu: { binary: join(root, "no-qemu"), version: "0", origin: "PATH", firmwareDirs: [] },
    kernel: { bzImage: join(root, "bzImage"), config: {} },
    initrd: join(root, "initrd"),
  } as unknown as PreparedGuest;
  const started: string[] = [];
  await t.rejects(
    bootPrepared(prepared, {
      accel: "tcg",
      bootTimeoutMs: 5000,
      device: { pci: "0000:03:00.0", host },
      onQemuStarted: () => started.push(host.driverOf("0000:03:00.0") ?? "none"),
    }),
  );
  t.same(started.slice(0, 1), ["vfio-pci"], "QEMU was started with the function on vfio-pci");
  t.equal(host.driverOf("0000:03:00.0"), "erdma", "back on erdma");
  t.equal(host.overrideOf("0000:03:00.0"), "(null)");
  t.equal(basename(readlinkSync(join(root, "sys/bus/pci/devices/0000:03:00.0/driver"))), "erdma");
  t.equal(readFileSync(join(root, "sys/bus/pci/devices/0000:03:00.0/driver_override"), "utf8"), "(null)\n");
});

t.test("hil boot/run refuse a bad --device-pci before anything is built (exit 2)", async (t) => {
  const iso = isolate();
  const bad = await hil(["boot", "--device-pci", "03:00", "--", "true"], iso.env);
  t.equal(bad.exitCode, 2, bad.stderr);
  t.match(
    bad.stderr,
    /hil: error: --device-pci takes a PCI address like 0000:03:00.0 or 03:00.0.*got "03:00"/,
  );
  t.notMatch(bad.stderr, /\[(kernel|boot|qemu|device)\]/, "nothing was built or booted");
  const absent = await hil(["run", "--device-pci", "ffff:ff:1f.7", "--scenario", "drain-qp-idle"], iso.env);
  t.equal(absent.exitCode, 2, absent.stderr);
  t.match(absent.stderr, /hil: error: --device-pci ffff:ff:1f.7: no such PCI function on this host/);
  const both = await hil(["run", "--device-pci", "03:00.0", "--device-socket", "/s"], iso.env);
  t.equal(both.exitCode, 2);
  t.match(both.stderr, /--device-pci and --device-socket each attach a device/);
  const help = await hil(["boot", "--help"], iso.env);
  t.match(help.stdout, /--device-pci <BDF>/);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left in its TMPDIR");
});
