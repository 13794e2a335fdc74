/**
 * Two guests on Linux 6.12, each with its own emulated erdma device, the two devices served by one
 * process on one fabric and the guests' fabric NICs on one QEMU wire (dgram over unix sockets).
 * Each guest's erdma binds to its fabric NIC (not the SSH NIC), the guests reach each other over the
 * fabric addresses, and nothing is left behind afterwards: no QEMU, no device server, no socket,
 * no temp dir, on the success path and on a failed boot.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import { type BootedPair, bootPair, type PairedGuest, prepareGuest } from "../../harness/boot.ts";
import { nodeGuidOf, parseIbvDevinfo, parseRdmaLink } from "../../harness/probe/expectations.ts";
import { readHwTrace } from "../../harness/protocol/hw-trace.ts";
import { sweepStaleRunDirs } from "../../qemu/launch/rundir.ts";
import { type Isolation, isolate, leftovers } from "../support/cli.ts";
import { processGone } from "../support/guest.ts";

t.setTimeout(30 * 60_000);

const BASE = "debian:6.12";

/**
 * Runs `fn` with TMPDIR pointing at a private dir, so every run dir, socket and process of the
 * pair is told apart from other work on the machine; then checks that nothing is left there.
 */
async function isolated(t: Test, fn: (iso: Isolation, pids: number[]) => Promise<void>): Promise<void> {
  const iso = isolate();
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = iso.tmp;
  const pids: number[] = [];
  try {
    await fn(iso, pids);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    for (const pid of pids) t.ok(await processGone(pid), `process ${pid} is gone`);
    const left = leftovers(iso);
    t.same(left.processes, [], "no QEMU or device server left running");
    t.same(left.entries, [], "no run dir, socket or trace left in TMPDIR");
    rmSync(iso.tmp, { recursive: true, force: true });
  }
}

async function fabricNetdev(g: PairedGuest): Promise<string | undefined> {
  const r = await g.exec(
    `for d in /sys/class/net/*; do [ "$(cat $d/address)" = ${g.fabricMac} ] && echo \${d##*/}; done`,
  );
  return r.stdout.trim() || undefined;
}

t.test(`${BASE}: two guests, one erdma fabric, a ping over the fabric NICs`, async (t) => {
  const prepared = await prepareGuest({ base: BASE, configs: [] });
  const dir = t.testdir({});
  const traces = [join(dir, "hw-trace-0.jsonl"), join(dir, "hw-trace-1.jsonl")] as const;
  await isolated(t, async (iso, pids) => {
    let pair: BootedPair | undefined;
    const started = Date.now();
    try {
      pair = await bootPair(prepared, {
        memoryMiB: 512,
        devices: [{ traceFile: traces[0] }, { traceFile: traces[1] }],
        keepConsoles: process.env.HIL_KEEP_CONSOLE
          ? [
              join(process.env.HIL_KEEP_CONSOLE, "console-fabric-0.log"),
              join(process.env.HIL_KEEP_CONSOLE, "console-fabric-1.log"),
            ]
          : undefined,
        onQemuStarted: (_i, info) => pids.push(info.pid),
      });
      const p = pair;
      pids.push(p.server.pid);
      t.comment(
        `pair up after ${Date.now() - started} ms; first SSH command: ${p.guests
          .map((g) => `guest${g.index} ${g.timings.firstCommandMs} ms`)
          .join(", ")} (${p.guests[0].timings.accel})`,
      );
      t.same(p.fabricIps, ["10.99.0.1", "10.99.0.2"]);
      t.ok(
        p.server.devices.every((d) => d.socketPath.startsWith(iso.tmp) && existsSync(d.socketPath)),
        "one server process, one socket per device",
      );
      t.not(p.server.devices[0]?.socketPath, p.server.devices[1]?.socketPath);

      for (const g of p.guests) {
        await t.test(`guest${g.index}: erdma bound to the fabric NIC ${g.fabricIp}`, async (t) => {
          const netdev = await fabricNetdev(g);
          t.ok(netdev, `a NIC with the fabric MAC ${g.fabricMac}`);
          const link = await g.exec("rdma link show");
          t.equal(link.exitCode, 0, link.stderr);
          const links = parseRdmaLink(link.stdout).filter((l) => l.device.startsWith("erdma"));
          t.equal(links.length, 1, `one erdma link: ${link.stdout.trim()}`);
          t.equal(links[0]?.netdev, netdev, "on the fabric NIC, not the SSH NIC");
          t.equal(links[0]?.state, "ACTIVE");
          const devinfo = await g.exec("ibv_devinfo");
          t.equal(devinfo.exitCode, 0, devinfo.stderr);
          const hca = parseIbvDevinfo(devinfo.stdout).find((d) => d.hcaId.startsWith("erdma"));
          t.ok(hca, `ibv_devinfo lists erdma:\n${devinfo.stdout}`);
          t.equal(hca?.attrs.node_guid, nodeGuidOf(g.fabricMac), "its GUID comes from the fabric MAC");
          const addr = await g.exec(`ip -4 -o addr show dev ${netdev}`);
          t.match(addr.stdout, `inet ${g.fabricIp}/24`, "the fabric address is on that NIC");
          const ssh = await g.exec("ip -4 -o addr show");
          t.match(ssh.stdout, "inet 10.0.2.15/24", "the SSH NIC keeps user networking");
          const host = await g.exec("hostname");
          t.equal(host.stdout.trim(), `hil-guest${g.index}`);
        });
      }

      await t.test("the guests ping each other over the fabric", async (t) => {
        for (const [from, to] of [
          [p.guests[0], p.guests[1]],
          [p.guests[1], p.guests[0]],
        ] as const) {
          const ping = await from.exec(`ping -c 3 -W 5 ${to.fabricIp}`, { timeoutMs: 60_000 });
          t.equal(ping.exitCode, 0, `guest${from.index} -> ${to.fabricIp}: ${ping.stdout}${ping.stderr}`);
          t.match(ping.stdout, /3 packets transmitted, 3 packets received/);
          const neigh = await from.exec(`ip neigh show ${to.fabricIp}`);
          t.match(neigh.stdout, `lladdr ${to.fabricMac}`, "the peer answered from its fabric NIC");
        }
      });

      await t.test("each device has its own trace, every line names it", async (t) => {
        for (const [i, file] of traces.entries()) {
          const events = readHwTrace(file, { lenient: true });
          t.ok(events.length > 0, `trace ${i} has events`);
          t.same([...new Set(events.map((e) => e.dev))], [`erdma${i}`], `trace ${i}: only erdma${i}`);
          t.ok(
            events.some((e) => e.kind === "state" && e.object === "device" && e.to === "initialized"),
            `erdma${i} was initialized by its guest's driver`,
          );
        }
      });
    } finally {
      await pair?.dispose();
    }
    t.ok(pair?.server.exit, "the device server has exited");
    t.equal(pair?.server.exit?.code, 0, "after SIGTERM, cleanly");
    for (const d of pair?.server.devices ?? [])
      t.notOk(existsSync(d.socketPath), `${d.name}'s socket removed`);
    t.notOk(pair && existsSync(pair.network.dir), "the wire's dir removed");
  });
});

t.test(`${BASE}: a pair that cannot boot leaves nothing behind`, async (t) => {
  const prepared = await prepareGuest({ base: BASE, configs: [] });
  await isolated(t, async (iso, pids) => {
    // appended last, this wins over the pair's own address: init cannot set it and gives up
    const err = await bootPair(prepared, {
      memoryMiB: 512,
      kernelArgs: ["hil.fabric_ip=not-an-address"],
      onQemuStarted: (_i, info) => pids.push(info.pid),
    }).then(
      (pair) => pair.dispose().then(() => undefined),
      (e: unknown) => e as Error,
    );
    t.ok(err, "the boot fails");
    t.match(err?.message, /hil\.fabric_ip=not-an-address/, `the reason from init: ${err?.message}`);
    t.equal(pids.length, 2, "both guests' QEMUs were started");
    t.same(
      readdirSync(iso.tmp).filter((n) => !n.startsWith("tsx-")),
      [],
      "no run dir of a guest, the server or the wire",
    );
  });
});

t.test("a fabric with a bad profile is refused before anything starts", async (t) => {
  const prepared = await prepareGuest({ base: BASE, configs: [] });
  await isolated(t, async (_iso, pids) => {
    await t.rejects(
      bootPair(prepared, {
        devices: [{}, { profile: "no-such-profile" }],
        onQemuStarted: (_i, info) => pids.push(info.pid),
      }),
      { name: "HilError", where: /no-such-profile/ },
    );
    t.same(pids, [], "no QEMU was started");
  });
});

/** Starts test/support/pair-child.ts in `tmp`; resolves with its pids once both guests are up. */
function startPairChild(tmp: string) {
  const script = fileURLToPath(new URL("../support/pair-child.ts", import.meta.url));
  const proc = execFile(process.execPath, ["--import", "tsx", script], {
    env: { ...process.env, TMPDIR: tmp },
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  let out = "";
  let err = "";
  proc.stderr?.on("data", (d) => {
    err += d;
  });
  const up = new Promise<{ qemuPids: number[]; serverPid: number }>((resolve, reject) => {
    proc.stdout?.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line));
    });
    exited.then((e) =>
      reject(
        new Error(`the child exited before the pair was up (${e.code ?? e.signal}):\n${err.slice(-3000)}`),
      ),
    );
  });
  return { proc, up, exited };
}

/** The pair child started in `iso` and up (killed when `t` ends), its QEMUs' and server's pids in `pids`. */
async function pairUp(t: Test, iso: Isolation, pids: number[]) {
  const child = startPairChild(iso.tmp);
  t.teardown(() => void child.proc.kill("SIGKILL"));
  const { qemuPids, serverPid } = await child.up;
  pids.push(...qemuPids, serverPid);
  return { child, qemuPids };
}

t.test(
  `${BASE}: SIGINT to a process with a pair up: both guests and the server go, nothing is left`,
  async (t) => {
    await prepareGuest({ base: BASE, configs: [] });
    await isolated(t, async (iso, pids) => {
      const { child, qemuPids } = await pairUp(t, iso, pids);
      t.equal(qemuPids.length, 2, "two QEMUs");
      child.proc.kill("SIGINT");
      const exit = await child.exited;
      t.equal(exit.signal, "SIGINT", "the child died of SIGINT, as it would without us");
    });
  },
);

t.test(`${BASE}: SIGKILL to it: the processes still go; the next run sweeps its dirs`, async (t) => {
  await prepareGuest({ base: BASE, configs: [] });
  await isolated(t, async (iso, pids) => {
    const { child } = await pairUp(t, iso, pids);
    child.proc.kill("SIGKILL");
    await child.exited;
    for (const pid of pids) t.ok(await processGone(pid), `process ${pid} went with its parent`);
    const stale = readdirSync(iso.tmp).filter((n) => n.startsWith("hil-"));
    t.ok(stale.length > 0, `a SIGKILL leaves run dirs: ${stale.join(" ")}`);
    // what the next guest, device server or fabric does before it makes its own dir
    const swept = ["hil-guest-", "hil-erdma-", "hil-fabric-"].flatMap((p) => sweepStaleRunDirs(p, iso.tmp));
    t.equal(swept.length, stale.length, "every one of them is swept as stale");
  });
});
