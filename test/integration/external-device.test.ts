// The hardware-in-the-loop hook: `--device-socket` attaches a vfio-user device server hil did not
// start (here our own erdma model, in a process of its own, standing in for an RTL co-simulation
// or an FPGA bridge). `hil boot` gets erdma_0 bound to the guest NIC with the MAC the server
// reports; `hil run` checks the device probes (attributes not compared: no profile), runs a drain
// scenario on it (PASS) and skips a fault scenario (SKIP: no control channel to arm faults on);
// no hardware trace is kept, verdicts.json names the external device and `hil report` reads it.
// The server outlives both commands (it is not hil's to stop), serves the second guest after the
// first went, and once the test stops it nothing is left.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { DEFAULT_GUEST_MAC } from "../../harness/boot.ts";
import { startDevicesProcess } from "../../qemu/device-server/process.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { processExists } from "../support/guest.ts";

t.setTimeout(20 * 60 * 1000);

interface RunRecord {
  device: unknown;
  probe?: { id: string; verdict: string; reason: string }[];
  scenarios: {
    name: string;
    judgements: { profile: string; verdict: string }[];
    outcome?: { verdict: string; reason: string };
    trace?: string;
    hwTrace?: string;
  }[];
}

t.test("hil boot and hil run on an external vfio-user device server", async (t) => {
  const iso = isolate();
  const sock = join(iso.tmp, "external.sock");
  const server = await startDevicesProcess({
    device: "erdma",
    devices: [{ socketPath: sock, mac: DEFAULT_GUEST_MAC }],
  });
  t.teardown(() => server.stop());
  const alive = () => server.exit === undefined && processExists(server.pid);

  const boot = await hil(["boot", "--device-socket", sock, "--", "rdma link"], iso.env);
  t.equal(boot.exitCode, 0, `${boot.stdout}${boot.stderr}`.slice(-4000));
  t.match(boot.stdout, /^link erdma_0\/1 state ACTIVE physical_state LINK_UP netdev eth0\s*$/m);
  t.match(boot.stderr, `[device] external vfio-user device at ${sock} (not started or stopped by hil)`);
  t.ok(alive(), "the external server is still running after hil boot");

  const dir = t.testdir({});
  const run = await hil(
    [
      "run",
      "--device-socket",
      sock,
      "--scenario",
      "drain-qp-idle,fault-error-wqe",
      "--rules",
      "linux",
      "--run-dir",
      dir,
    ],
    iso.env,
  );
  const out = `${run.stdout}${run.stderr}`.slice(-6000);
  t.equal(run.exitCode, 0, `a PASS and a SKIP: exit 0\n${out}`);
  t.match(
    run.stdout,
    /^the device probes: kernel-release PASS, erdma-module PASS, rdma-core PASS, erdma-probe PASS, verbs-lifecycle PASS, console-clean PASS$/m,
  );
  t.match(run.stdout, /^drain-qp-idle\s+PASS\s+\d\w*:[1-9]\d*(?: \w+:\d+)*\s+every rule holds$/m);
  t.match(
    run.stdout,
    /^fault-error-wqe\s+SKIP\s+-\s+the external device at \S+external\.sock has no fault control/m,
  );
  t.ok(alive(), "the external server is still running after hil run");

  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as RunRecord;
  t.same(record.device, { external: sock, mac: DEFAULT_GUEST_MAC });
  t.match(
    record.probe?.find((c) => c.id === "erdma-probe")?.reason,
    `erdma_0 bound to eth0 (${DEFAULT_GUEST_MAC}); ibv_devinfo lists erdma_0; external device at ${sock}: attributes not checked`,
  );
  const idle = record.scenarios.find((s) => s.name === "drain-qp-idle");
  t.same(
    idle?.judgements.map((j) => `${j.profile} ${j.verdict}`),
    ["linux PASS"],
  );
  t.ok(idle?.trace && existsSync(join(dir, idle.trace)), "the scenario's verbs trace");
  t.equal(idle?.hwTrace, undefined, "no hardware trace slice of an external device");
  const fault = record.scenarios.find((s) => s.name === "fault-error-wqe");
  t.match(fault?.outcome, { verdict: "SKIP", reason: /no control channel to arm faults on/ });
  t.notOk(existsSync(join(dir, "hw-trace.jsonl")), "no hardware trace file");
  t.same(
    readdirSync(join(dir, "traces")).filter((f) => f.endsWith(".hw.jsonl")),
    [],
    "no per-scenario hardware traces",
  );

  const ktap = await hil(["report", dir, "--format", "ktap"], iso.env);
  t.equal(ktap.exitCode, 0, ktap.stderr);
  t.match(ktap.stdout, `external device ${sock}`);

  t.ok(alive(), "still running: stopping it is ours, not hil's");
  const ended = await server.stop();
  t.same(ended, { code: 0, signal: null }, "it stops cleanly on SIGTERM");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
