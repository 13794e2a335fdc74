/**
 * A ULP workload across two guests (`guests: 2`): a pair booted for the scenario alone, the
 * target's steps in the second guest and the host's in the first, their erdma devices served by
 * one process on one fabric (harness/boot.ts bootPair). A fault step arms on the host's device
 * (`on: qp`) or the target's (`on: peer`); the objects are counted on both guests and both devices;
 * the console of each guest is judged whole (it booted for this scenario), and the hardware trace
 * is both devices' (each event names its device). The pair is disposed of after the scenario.
 */
import { readFile } from "node:fs/promises";
import { progress } from "../../util/progress.ts";
import { type BootedPair, bootPair, type PreparedGuest } from "../boot.ts";
import { UlpRunner } from "../executor/ulp.ts";
import type { FaultObservation, ObjectCounts, Observation } from "../oracle/observations.ts";
import type { CompiledScenario } from "../scenario/compile.ts";
import { armUlpFault, deviceObjectCounts } from "./faults.ts";
import { harnessDeath } from "./harness-watch.ts";
import { consoleObservations } from "./judge-run.ts";
import type { UlpRunOutcome } from "./ulp-run.ts";

export interface PairRunOptions {
  prepared: PreparedGuest;
  deviceProfile?: string;
  /** each guest's console log, kept */
  consoles: readonly [string, string];
  /** each device's hardware trace file */
  hwTraces: readonly [string, string];
  /** boots the pair (default bootPair; tests boot none) */
  boot?: typeof bootPair;
}

export type PairOutcome = UlpRunOutcome & {
  durationMs: number;
  /** the device server or a QEMU died while the scenario ran */
  harnessFault?: string;
  /** both devices' hardware traces, one after the other */
  hwText: string;
};

function sum(counts: readonly (ObjectCounts | undefined)[]): ObjectCounts | undefined {
  if (counts.some((c) => c === undefined)) return undefined;
  const total: ObjectCounts = {};
  for (const c of counts) for (const [k, n] of Object.entries(c ?? {})) total[k] = (total[k] ?? 0) + n;
  return total;
}

export async function observePair(opts: PairRunOptions, compiled: CompiledScenario): Promise<PairOutcome> {
  const started = Date.now();
  const profile = opts.deviceProfile ? { profile: opts.deviceProfile } : {};
  const pair: BootedPair = await (opts.boot ?? bootPair)(opts.prepared, {
    devices: [
      { ...profile, traceFile: opts.hwTraces[0] },
      { ...profile, traceFile: opts.hwTraces[1] },
    ],
    keepConsoles: opts.consoles,
  });
  let outcome: UlpRunOutcome & { harnessFault?: string };
  try {
    for (const g of pair.guests) {
      const r = await g.exec("modprobe erdma", { timeoutMs: 60_000 });
      if (r.exitCode !== 0)
        throw new Error(`modprobe erdma failed in guest ${g.index + 1}: ${r.stderr.trim()}`);
    }
    const [host, target] = pair.guests;
    const devices = pair.server.devices.map((d) => d.name);
    const ran = await new UlpRunner(host, target).run(
      // the target listens on the second guest's fabric address, where the host connects
      { ...compiled, endpoint: { addr: pair.fabricIps[1], port: compiled.endpoint.port } },
      {
        fault: async (step) => {
          const device = devices[step.fault?.on === "peer" ? 1 : 0];
          const armed = await armUlpFault(pair.server, step, device, compiled.endpoint.port);
          const seen: FaultObservation = {
            ev: "fault",
            step: step.index,
            kind: step.fault?.kind ?? "?",
            spec: { ...armed.spec, device },
          };
          return seen;
        },
        deviceObjects: async () =>
          sum(await Promise.all(devices.map((d) => deviceObjectCounts(pair.server, d)))),
      },
    );
    const observations: Observation[] = [
      ...ran.observations,
      ...pair.guests.flatMap((g) => consoleObservations(g.consoleLog())),
    ];
    // the device server or a QEMU that died meanwhile is the harness's fault: nothing is said of the driver
    const died = pair.guests
      .map((g) => harnessDeath({ pid: g.pid, qemuExit: g.qemuExit, device: pair.server as never }))
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
    outcome = {
      records: [],
      sent: [],
      stuck: [],
      observations: [],
      wedged: false,
      error: err instanceof Error ? err.message : String(err),
    };
  } finally {
    await pair.dispose().catch((err: unknown) => {
      progress.info(`[suite] the guest pair did not stop cleanly: ${(err as Error).message}`);
    });
  }
  const traces = await Promise.all(opts.hwTraces.map((f) => readFile(f, "utf8").catch(() => "")));
  return { ...outcome, durationMs: Date.now() - started, hwText: traces.join("") };
}
