/**
 * A ULP workload across two guests (`guests: 2`): a pair booted for the scenario alone, the
 * target's steps in the second guest and the host's in the first. On erdma their devices are
 * served by one process on one fabric (harness/boot.ts bootPair); on siw each guest puts siw on
 * its fabric NIC (bootWiredPair). Each fabric NIC also gets an IPv6 address (FABRIC_IP6S), which
 * rnbd connects to. A fault step arms on the host's device (`on: qp`) or the target's
 * (`on: peer`); the objects are counted on both guests and both devices; the console of each
 * guest is judged whole (it booted for this scenario), and the hardware trace is both devices'
 * (each event names its device). The pair is disposed of after the scenario.
 */
import { readFile } from "node:fs/promises";
import { FABRIC_IP6_PREFIX, FABRIC_IP6S } from "../../qemu/launch/fabric-net.ts";
import { progress } from "../../util/progress.ts";
import {
  type BootedPair,
  bootPair,
  bootWiredPair,
  type PreparedGuest,
  type WiredGuest,
  type WiredPair,
} from "../boot.ts";
import { addSoftLink } from "../executor/soft-link.ts";
import { UlpRunner } from "../executor/ulp.ts";
import type { FaultObservation, ObjectCounts, Observation } from "../protocol/observations.ts";
import type { DriverName } from "../scenario/axes.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { softLinkOf } from "../scenario/drivers.ts";
import { armUlpFault, deviceObjectCounts } from "./faults.ts";
import { harnessDeath, watchHarness } from "./harness-watch.ts";
import { consoleObservations } from "./judge-run.ts";
import type { UlpRunOutcome } from "./ulp-run.ts";

export interface PairRunOptions {
  prepared: PreparedGuest;
  /** erdma: the emulated devices on one fabric; a software driver (siw, rxe): linked to each guest's fabric NIC */
  driver: DriverName;
  deviceProfile?: string;
  /** each guest's console log, kept */
  consoles: readonly [string, string];
  /** each device's hardware trace file */
  hwTraces: readonly [string, string];
  /** boots the erdma pair (default bootPair; tests boot none) */
  boot?: typeof bootPair;
  /** boots the siw pair (default bootWiredPair; tests boot none) */
  bootWired?: typeof bootWiredPair;
}

export type PairOutcome = UlpRunOutcome & {
  durationMs: number;
  /** the device server or a QEMU died while the scenario ran */
  harnessFault?: string;
  /** both devices' hardware traces, one after the other (none on siw: there is no device) */
  hwText?: string;
};

function sum(counts: readonly (ObjectCounts | undefined)[]): ObjectCounts | undefined {
  if (counts.some((c) => c === undefined)) return undefined;
  const total: ObjectCounts = {};
  for (const c of counts) for (const [k, n] of Object.entries(c ?? {})) total[k] = (total[k] ?? 0) + n;
  return total;
}

/** The pair of the run's driver, its RDMA devices up on the fabric NICs, which have their IPv6 too. */
async function bootForDriver(opts: PairRunOptions): Promise<WiredPair & { server?: BootedPair["server"] }> {
  const keepConsoles = opts.consoles;
  const link = softLinkOf(opts.driver);
  if (link) {
    const pair = await (opts.bootWired ?? bootWiredPair)(opts.prepared, { keepConsoles });
    await prepareFabric(pair, async (g, netdev) => {
      await addSoftLink(g, link, netdev);
    });
    return pair;
  }
  const profile = opts.deviceProfile ? { profile: opts.deviceProfile } : {};
  const pair = await (opts.boot ?? bootPair)(opts.prepared, {
    devices: [
      { ...profile, traceFile: opts.hwTraces[0] },
      { ...profile, traceFile: opts.hwTraces[1] },
    ],
    keepConsoles,
  });
  await prepareFabric(pair, async (g) => {
    const r = await g.exec("modprobe erdma", { timeoutMs: 60_000 });
    if (r.exitCode !== 0)
      throw new Error(`modprobe erdma failed in guest ${g.index + 1}: ${r.stderr.trim()}`);
  });
  return pair;
}

/** In each guest: the fabric NIC's IPv6 address, then `rdmaUp` (the pair is disposed of if either throws). */
async function prepareFabric(
  pair: WiredPair,
  rdmaUp: (g: WiredGuest, netdev: string) => Promise<void>,
): Promise<void> {
  try {
    for (const g of pair.guests) {
      const netdev = await fabricNetdev(g);
      const ip6 = `${FABRIC_IP6S[g.index]}/${FABRIC_IP6_PREFIX}`;
      const r = await g.exec(`ip -6 addr add ${ip6} dev ${netdev} nodad`, { timeoutMs: 10_000 });
      if (r.exitCode !== 0)
        throw new Error(
          `cannot give ${netdev} in guest ${g.index + 1} the address ${ip6}: ${r.stderr.trim()}`,
        );
      await rdmaUp(g, netdev);
    }
  } catch (err) {
    await pair.dispose().catch(() => {});
    throw err;
  }
}

/** The name of the guest's fabric NIC, found by its MAC. */
async function fabricNetdev(g: WiredGuest): Promise<string> {
  const r = await g.exec(
    `for d in /sys/class/net/*; do [ "$(cat "$d/address")" = "${g.fabricMac.toLowerCase()}" ] && basename "$d"; done; true`,
    { timeoutMs: 10_000 },
  );
  const name = r.stdout.trim().split("\n")[0];
  if (r.exitCode !== 0 || !name)
    throw new Error(`guest ${g.index + 1} has no NIC with the fabric MAC ${g.fabricMac}`);
  return name;
}

/** Where the target listens: rnbd's server on the IPv6 wildcard, so its IPv6 address; else its IPv4. */
function targetAddr(compiled: CompiledScenario, pair: WiredPair): string {
  return compiled.scenario.workload === "rnbd" ? FABRIC_IP6S[1] : pair.fabricIps[1];
}

/** A QEMU or the device server died under the pair while the steps ran: why. */
class HarnessDeath extends Error {}

/** The outcome of a run that broke before anything could be judged. */
function broken(err: unknown): UlpRunOutcome {
  return {
    records: [],
    sent: [],
    stuck: [],
    observations: [],
    wedged: false,
    error: err instanceof Error ? err.message : String(err),
  };
}

export async function observePair(opts: PairRunOptions, compiled: CompiledScenario): Promise<PairOutcome> {
  const started = Date.now();
  let pair: WiredPair & { server?: BootedPair["server"] };
  try {
    pair = await bootForDriver(opts);
  } catch (err) {
    return {
      ...broken(err),
      durationMs: Date.now() - started,
      ...(opts.driver === "erdma" ? { hwText: "" } : {}),
    };
  }
  const server = pair.server;
  // each guest's QEMU and the device server, watched while the steps run
  const watches = pair.guests.map((g) =>
    watchHarness({
      get pid() {
        return g.pid;
      },
      get qemuExit() {
        return g.qemuExit;
      },
      device: server as never,
    }),
  );
  let outcome: UlpRunOutcome & { harnessFault?: string };
  try {
    const [host, target] = pair.guests;
    const devices = server ? server.devices.map((d) => d.name) : [];
    const run = new UlpRunner(host, target).run(
      // the target listens on the second guest's fabric address, where the host connects
      { ...compiled, endpoint: { addr: targetAddr(compiled, pair), port: compiled.endpoint.port } },
      server
        ? {
            fault: async (step) => {
              const device = devices[step.fault?.on === "peer" ? 1 : 0];
              const armed = await armUlpFault(server, step, device, compiled.endpoint.port);
              const seen: FaultObservation = {
                ev: "fault",
                step: step.index,
                kind: step.fault?.kind ?? "?",
                spec: { ...armed.spec, device },
              };
              return seen;
            },
            deviceObjects: async () =>
              sum(await Promise.all(devices.map((d) => deviceObjectCounts(server, d)))),
          }
        : {},
    );
    // settles once the pair is disposed of, after a death; nothing waits for it then
    run.catch(() => {});
    const first = await Promise.race([run, ...watches.map((w) => w.died.then((why) => ({ died: why })))]);
    if ("died" in first) throw new HarnessDeath(first.died);
    const ran = first;
    // a stuck step is the hang rule's evidence, as on one guest (suite.ts observe)
    const observations: Observation[] = [
      ...ran.stuck,
      ...ran.observations,
      ...pair.guests.flatMap((g) => consoleObservations(g.consoleLog())),
    ];
    // the device server or a QEMU that died meanwhile is the harness's fault: nothing is said of the driver
    const died = pair.guests
      .map((g) => harnessDeath({ pid: g.pid, qemuExit: g.qemuExit, device: server as never }))
      .find((why) => why !== undefined);
    outcome = {
      records: [],
      sent: [],
      stuck: ran.stuck,
      observations,
      wedged: ran.wedged,
      ...(died ? { error: died, harnessFault: died } : ran.error !== undefined ? { error: ran.error } : {}),
    };
  } catch (err) {
    outcome = { ...broken(err), ...(err instanceof HarnessDeath ? { harnessFault: err.message } : {}) };
  } finally {
    for (const w of watches) w.stop();
    await pair.dispose().catch((err: unknown) => {
      progress.info(`[suite] the guest pair did not stop cleanly: ${(err as Error).message}`);
    });
  }
  if (!server) return { ...outcome, durationMs: Date.now() - started };
  const traces = await Promise.all(opts.hwTraces.map((f) => readFile(f, "utf8").catch(() => "")));
  return { ...outcome, durationMs: Date.now() - started, hwText: traces.join("") };
}
