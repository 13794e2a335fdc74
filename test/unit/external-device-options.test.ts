// --device-socket and --mac without a guest: an external vfio-user device server's socket is
// checked before anything is built (a path that does not exist, a regular file, a directory are
// one clear error naming the path), the options it contradicts (--no-device, --device-profile, --trace,
// --driver siw) are refused, --mac takes unicast MACs only, and what boot, the record and the
// smoke checks get for each kind of device. The suite makes a scenario with fault steps a SKIP on
// an external device (no control channel) before any guest boots. The CLI refuses the same.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import t, { type Test } from "tap";
import { externalFaultReason } from "../../harness/backend/external-socket.ts";
import { bootDevice, recordedDevice, smokeDevice } from "../../harness/backend/registry.ts";
import {
  addDeviceOptions,
  type DeviceOptionValues,
  deviceOptions,
  parseMacOption,
} from "../../harness/cli/device-options.ts";
import { HilError } from "../../util/errors.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { runFaultyOn } from "../support/fake-suite.ts";

/** A listening UNIX socket in a short-named temp dir (closed and removed when the test ends). */
async function listening(t: Test): Promise<string> {
  // t.testdir's path is longer than a UNIX socket path may be
  const dir = mkdtempSync(join(tmpdir(), "hil-ext-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "dev.sock");
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return path;
}

const values = (v: Partial<DeviceOptionValues>): DeviceOptionValues => ({ device: true, ...v });

t.test("--device-socket: a listening UNIX socket is the external device", async (t) => {
  const sock = await listening(t);
  const chosen = deviceOptions(values({ deviceSocket: sock }));
  t.same(chosen, { kind: "external", socketPath: sock, mac: "52:54:00:12:34:56" });
  t.same(bootDevice(chosen), { external: sock }, "boot attaches it; nothing is started");
  t.same(recordedDevice(chosen, "hw-trace.jsonl"), { external: sock, mac: "52:54:00:12:34:56" });
  t.same(smokeDevice(chosen, "/x/hw-trace.jsonl"), { external: sock, mac: "52:54:00:12:34:56" });
  const withMac = deviceOptions(values({ deviceSocket: sock, mac: "02:00:00:00:00:01" }));
  t.match(withMac, { kind: "external", mac: "02:00:00:00:00:01" });
  // the emulated device for comparison
  const emulated = deviceOptions(values({}), { traceFile: "/x/hw.jsonl" });
  t.match(emulated, { kind: "emulated", profileName: "erdma-reflush", traceFile: "/x/hw.jsonl" });
  t.same(bootDevice(emulated), { profile: "erdma-reflush", traceFile: "/x/hw.jsonl" });
  t.same(recordedDevice(emulated, "hw-trace.jsonl"), { profile: "erdma-reflush", trace: "hw-trace.jsonl" });
  t.equal(bootDevice(deviceOptions(values({ device: false }))), false);
  t.equal(recordedDevice(undefined, "hw-trace.jsonl"), null);
});

t.test("--device-socket: what is not a socket is an error naming the path", async (t) => {
  const dir = t.testdir({ "plain.txt": "not a socket\n" });
  const missing = join(dir, "nowhere.sock");
  t.throws(() => deviceOptions(values({ deviceSocket: missing })), HilError);
  try {
    deviceOptions(values({ deviceSocket: missing }));
  } catch (err) {
    t.equal((err as HilError).where, missing, "the path is named");
    t.match((err as HilError).format(), /nowhere\.sock: no such file: --device-socket needs the UNIX socket/);
  }
  const file = join(dir, "plain.txt");
  t.throws(() => deviceOptions(values({ deviceSocket: file })), {
    name: "HilError",
    where: file,
    message: /is a regular file, not a UNIX socket/,
  });
  const sub = join(dir, "sub");
  mkdirSync(sub);
  t.throws(() => deviceOptions(values({ deviceSocket: sub })), { where: sub, message: /is a directory/ });
});

t.test("--device-socket: a path longer than a UNIX socket's may be is refused", async (t) => {
  const sock = await listening(t);
  const long = join(t.testdir({}), "a-link-to-the-socket.sock");
  symlinkSync(sock, long);
  t.ok(Buffer.byteLength(long) > 107, `the test's path is long (${Buffer.byteLength(long)} bytes)`);
  t.throws(() => deviceOptions(values({ deviceSocket: long })), {
    where: long,
    message: /the socket path is \d+ bytes long, a UNIX socket path at most 107/,
  });
});

t.test("--device-socket contradicts --no-device, --device-profile, --trace and --driver siw", async (t) => {
  const sock = await listening(t);
  const dir = t.testdir({});
  t.throws(() => deviceOptions(values({ deviceSocket: sock, device: false })), {
    message: "--device-socket and --no-device contradict each other",
  });
  t.throws(() => deviceOptions(values({ deviceSocket: sock, deviceProfile: "erdma-2022" })), {
    message:
      /--device-profile sets the emulated erdma device's behaviour; the external device .* has its own/,
  });
  t.throws(() => deviceOptions(values({ deviceSocket: sock }), { traceFile: "/x/hw.jsonl" }), {
    message: /hil cannot record an external device's/,
  });
  t.throws(() => deviceOptions(values({ deviceSocket: sock }), { driver: "siw" }), {
    message: /--driver siw runs soft-iWARP without a device; --device-socket attaches one/,
  });
  // the contradiction is told before the socket is looked at
  t.throws(() => deviceOptions(values({ deviceSocket: join(dir, "gone"), device: false })), {
    message: /contradict/,
  });
  t.equal(deviceOptions(values({}), { driver: "siw" }), undefined, "siw alone attaches nothing");
  t.throws(() => deviceOptions(values({ deviceProfile: "erdma-2022" }), { driver: "siw" }), {
    message: /--driver siw attaches none/,
  });
});

t.test("--mac: six hex octets, unicast, not zero; lower-cased", async (t) => {
  t.equal(parseMacOption("52:54:00:AB:cd:01"), "52:54:00:ab:cd:01");
  t.throws(() => parseMacOption("52:54:00:12:34"), /expected a MAC like 52:54:00:12:34:56/);
  t.throws(() => parseMacOption("52-54-00-12-34-56"), /six hex octets, colons/);
  t.throws(() => parseMacOption("52:54:00:12:34:zz"), /got "52:54:00:12:34:zz"/);
  t.throws(() => parseMacOption("01:00:5e:00:00:01"), /multicast/);
  t.throws(() => parseMacOption("00:00:00:00:00:00"), /not a NIC's MAC/);
  const cmd = addDeviceOptions(new Command("x").exitOverride().configureOutput({ writeErr: () => {} }));
  cmd.parse(["--mac", "02:AA:00:00:00:01", "--device-socket", "/s"], { from: "user" });
  t.match(cmd.opts(), { mac: "02:aa:00:00:00:01", deviceSocket: "/s", device: true });
  const bad = addDeviceOptions(new Command("x").exitOverride().configureOutput({ writeErr: () => {} }));
  t.throws(() => bad.parse(["--mac", "nope"], { from: "user" }), { code: "commander.invalidArgument" });
});

t.test("the suite on an external device: fault scenarios are SKIP before any guest boots", async (t) => {
  const dir = t.testdir({});
  const sock = join(dir, "dev.sock");
  const report = await runFaultyOn({ kind: "external", socketPath: sock, mac: "52:54:00:12:34:56" }, dir);
  t.equal(report.boots, 0, "no guest booted");
  t.same(report.scenarios[0]?.outcome, { verdict: "SKIP", reason: externalFaultReason(sock) });
  t.match(externalFaultReason(sock), /^the external device at .*dev\.sock has no fault control/);
  t.same(
    report.scenarios[0]?.judgements.map((j) => `${j.profile} ${j.verdict}`),
    ["linux SKIP"],
  );
});

t.test("hil boot/run refuse a bad --device-socket before anything is built (exit 2)", async (t) => {
  const iso = isolate();
  const missing = join(iso.tmp, "no-such.sock");
  const boot = await hil(["boot", "--device-socket", missing, "--", "true"], iso.env);
  t.equal(boot.exitCode, 2, boot.stderr);
  t.match(boot.stderr, `hil: error: ${missing}: no such file: --device-socket needs the UNIX socket`);
  t.notMatch(boot.stderr, /\[(kernel|boot|qemu|device)\]/, "nothing was built or booted");
  const file = join(iso.tmp, "plain");
  writeFileSync(file, "");
  const run = await hil(["run", "--device-socket", file, "--scenario", "drain-qp-idle"], iso.env);
  t.equal(run.exitCode, 2, run.stderr);
  t.match(run.stderr, `hil: error: ${file}: is a regular file, not a UNIX socket`);
  const trace = await hil(["boot", "--device-socket", file, "--trace", "hw.jsonl"], iso.env);
  t.equal(trace.exitCode, 2);
  t.match(trace.stderr, /hil cannot record an external device's/);
  const siw = await hil(["run", "--device-socket", file, "--driver", "siw"], iso.env);
  t.equal(siw.exitCode, 2);
  t.match(siw.stderr, /--driver siw runs soft-iWARP without a device/);
  const noDevice = await hil(["run", "--device-socket", file, "--no-device"], iso.env);
  t.equal(noDevice.exitCode, 2);
  t.match(noDevice.stderr, /--device-socket and --no-device contradict each other/);
  const mac = await hil(["boot", "--mac", "01:02:03:04:05:06"], iso.env);
  t.equal(mac.exitCode, 2);
  t.match(mac.stderr, /multicast MAC/);
  const help = await hil(["run", "--help"], iso.env);
  t.match(help.stdout, /--device-socket <path>/);
  t.match(help.stdout, /--mac <mac>/);
  rmSync(file);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left in its TMPDIR");
});
