// The device backends' registry (harness/backend): which backend the options ask for and in what
// order the others are asked before the default, which backend each driver implies, a device's
// record read back as the same backend's run, the backends' own options on the commands that boot,
// and the suite asking the backend (two guests on a device one guest at a time can have: a SKIP
// before anything boots).
import { Command } from "commander";
import t from "tap";
import type { DeviceOptionValues } from "../../harness/backend/backend.ts";
import { emulated } from "../../harness/backend/emulated.ts";
import { ONE_DEVICE_NO_PAIR } from "../../harness/backend/external-socket.ts";
import {
  type AnyBackend,
  askedBackend,
  BACKENDS,
  backendOf,
  hwTraceOf,
  impliedBackend,
  impliedDevice,
  impliedProfile,
  oneGuestOptions,
  profileOf,
  readDevice,
  runsRemotely,
  runViews,
  takesProfile,
} from "../../harness/backend/registry.ts";
import type { PreparedGuest } from "../../harness/boot.ts";
import { addDeviceOptions } from "../../harness/cli/device-options.ts";
import { DRIVERS } from "../../harness/scenario/axes.ts";
import { selectScenarios } from "../../harness/scenario/select.ts";
import { runSuite } from "../../harness/suite/suite.ts";

const values = (v: Partial<DeviceOptionValues>): DeviceOptionValues => ({ device: true, ...v });
const asked = (v: Partial<DeviceOptionValues>, driver?: string) =>
  askedBackend(values(v), driver ? { driver } : {}).kind;

t.test("one backend per kind; every driver implies one that serves it", async (t) => {
  const kinds = BACKENDS.map((b) => b.kind);
  t.same([...new Set(kinds)], kinds, "kinds are unique");
  t.equal(BACKENDS[0], emulated, "the emulated device is the default");
  for (const driver of DRIVERS) {
    const b = impliedBackend(driver);
    t.ok(b.drivers.includes(driver), `${driver} implies ${b.kind}, which serves it`);
    t.equal(BACKENDS.filter((x) => x.impliedBy.includes(driver)).length, 1, `${driver}: one implied backend`);
  }
  t.equal(impliedProfile("erdma", undefined), "erdma-reflush");
  t.equal(impliedProfile("erdma", "erdma-2022"), "erdma-2022");
  t.equal(impliedProfile("siw", "erdma-2022"), undefined, "siw's device takes no profile");
  t.ok(takesProfile("erdma"));
  t.notOk(takesProfile("siw"));
  t.equal(impliedDevice("siw"), undefined, "siw: no device");
  const d = impliedDevice("erdma", { deviceProfile: "erdma-2022", mac: "02:00:00:00:00:01" });
  t.match(d, { kind: "emulated", profileName: "erdma-2022", mac: "02:00:00:00:00:01" });
  t.equal(profileOf(d), "erdma-2022");
  t.throws(() => impliedDevice("erdma", { deviceProfile: "no-such-profile" }), {
    name: "HilError",
    message: /no such device profile/,
  });
});

t.test("which backend the options ask for, before any is checked", async (t) => {
  t.equal(asked({}), "emulated", "none asked: the default");
  t.equal(asked({ deviceProfile: "erdma-2022" }), "emulated");
  t.equal(asked({ deviceSocket: "/nowhere.sock" }), "external", "the socket is not looked at yet");
  t.equal(asked({ devicePci: "nonsense" }), "pci", "nor the address");
  t.equal(
    asked({ deviceSocket: "/s", devicePci: "03:00.0" }),
    "pci",
    "--device-pci's backend tells the clash",
  );
  t.equal(asked({ target: "ssh://root@h" }), "target");
  t.equal(asked({ target: "ssh://root@h" }, "siw"), "target", "a target runs siw on its own NIC");
  t.equal(asked({}, "siw"), "none");
  t.equal(asked({ device: false }), "none");
  t.equal(asked({ deviceSocket: "/s", device: false }), "external", "its backend says they contradict");
  t.equal(oneGuestOptions(), "--device-socket or --device-pci");
});

t.test("a device's views: boot, trace, remote, and its record read back", async (t) => {
  t.equal(backendOf(undefined).kind, "none");
  t.equal(backendOf(undefined).boot(undefined), false);
  const target = askedBackend(values({ target: "ssh://root@h", targetDevice: "erdma_0" })).choose(
    values({ target: "ssh://root@h", targetDevice: "erdma_0" }),
    {},
  );
  t.same(target, { kind: "target", url: "ssh://root@h", deviceName: "erdma_0" });
  t.ok(runsRemotely(target), "a target's driver runs where hil boots nothing");
  t.notOk(runsRemotely(undefined));
  const backends: readonly AnyBackend[] = BACKENDS;
  for (const b of backends) {
    const device = b.example;
    t.equal(runsRemotely(device), !b.boots, `${b.kind}: remote`);
    t.equal(hwTraceOf(device), b.hwTrace?.keptIn(device), `${b.kind}: hardware trace`);
    const recorded = b.record(device, "hw-trace.jsonl");
    if (!b.runs) {
      t.equal(recorded, null, `${b.kind} records no device`);
      continue;
    }
    const run = readDevice({ device: recorded });
    t.equal(run?.kind, b.kind, `${b.kind}: its record reads back as its run`);
    if (!run) continue;
    const views = runViews(run);
    t.ok(views.describe(run).length > 0, `${b.kind}: described`);
    const [key, value] = views.property(run);
    t.ok(key in (recorded ?? {}), `${b.kind}: its property names its record's key ${key}`);
    t.equal(value, (recorded as Record<string, string>)[key]);
    t.match(views.rerunArgs(run, { absolute: (p) => `/abs/${p}` })[0], /^--device-/);
  }
  t.same(
    readDevice({ deviceProfile: "erdma-2022" }),
    { kind: "emulated", profile: "erdma-2022" },
    "an old record",
  );
  t.equal(readDevice({ device: null }), undefined);
});

t.test("the commands that boot take each backend's own option", async (t) => {
  const cmd = addDeviceOptions(new Command("x"));
  const flags = cmd.options.map((o) => o.flags);
  for (const b of BACKENDS) if (b.option) t.ok(flags.includes(b.option.flags), b.option.flags);
  t.same(
    flags.filter((f) => f.startsWith("--device-socket") || f.startsWith("--device-pci")),
    ["--device-socket <path>", "--device-pci <BDF>"],
    "in registry order",
  );
});

t.test("two guests on a device one guest at a time can have: SKIP before anything boots", async (t) => {
  const [pair] = await selectScenarios("ulp-rnbd-two-guests");
  if (!pair) throw new Error("no ulp-rnbd-two-guests scenario");
  const report = await runSuite({
    prepared: {} as PreparedGuest,
    scenarios: [pair],
    runDir: t.testdir({}),
    driver: "erdma",
    executor: "kernel",
    device: { kind: "external", socketPath: "/run/dev.sock", mac: "52:54:00:12:34:56" },
    executorFactory: async () => {
      throw new Error("no executor may load: nothing boots");
    },
  });
  t.equal(report.boots, 0);
  t.same(report.scenarios[0]?.outcome, { verdict: "SKIP", reason: ONE_DEVICE_NO_PAIR });
});
