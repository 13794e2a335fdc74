/**
 * Runs vfio-user device servers as one process, following the spec's "Backend Program
 * Conventions": --socket-path=PATH, no daemonizing, SIGTERM honoured.
 *
 *   node --import tsx qemu/device-server/main.ts --socket-path /tmp/dev.sock [--device hil-testdev|erdma]
 *        [--mac XX:XX:XX:XX:XX:XX] [--profile NAME|FILE] [--trace FILE|-] [--quiet] [--dma-timeout-ms N]
 *        [--exit-with-parent]
 *
 * One --socket-path serves one device. Repeat it to serve several devices of the same kind from
 * this process, each on its own socket: the n-th --mac belongs to the n-th --socket-path (erdma
 * needs exactly one --mac per socket, all distinct). Several erdma devices share one fabric (the
 * wire of qemu/erdma/fabric.ts), so QPs on one device find their peers on another: two guests,
 * each with its own device, joined by it. One erdma device alone has a fabric of its own
 * (loopback), as before. Device names: `erdma` for a single device, else `erdma0`, `erdma1`, ...
 * in --socket-path order.
 *
 * --mac and --profile are the erdma device's: the MAC of the guest NIC it pairs with (required) and
 * its behaviour profile (fixtures/profiles/<name>.json, default erdma-reflush). --profile given once
 * applies to every device; else give one per --socket-path. The trace is JSON lines; for erdma it
 * holds the core's hardware events (register accesses, doorbells, commands, state changes, queue
 * elements, interrupts) and the server's session-level events (marked "src":"vfio-user"), each with
 * `t`, milliseconds since the process started (one clock for all devices) and `dev`, the device's
 * name. --trace given once takes every device's lines; else give one per --socket-path.
 * --control PATH (erdma) opens the control channel (control-socket.ts; the requests are
 * qemu/erdma/control.ts's): arm and clear faults, read device state, for every device of the
 * process by name.
 * --exit-with-parent stops the server (as SIGTERM would) once the process that started it is gone,
 * even if that one was killed without a chance to stop it.
 *
 * Prints "listening <path>" on stdout for each socket once it accepts connections. Exits 0 on
 * SIGTERM or SIGINT after removing every socket; 2 on bad arguments; 1 if a socket cannot be
 * listened on (the sockets already made are removed first).
 */
import { createWriteStream, realpathSync, type WriteStream } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { isHilError } from "../../util/errors.ts";
import type { ControlledDevice } from "../erdma/control.ts";
import { parseMac } from "../erdma/device.ts";
import { Fabric } from "../erdma/fabric.ts";
import type { ErdmaProfile } from "../erdma/profile.ts";
import { DEFAULT_PROFILE, loadProfile } from "../erdma/profile-file.ts";
import { loadRtlEngine } from "../erdma/rtl/engine.ts";
import { ErdmaVfioDevice, keepServerCommand, keepServerEvent } from "../erdma/vfio-user-device.ts";
import { createTestDevice } from "../testdev/device.ts";
import type { DeviceModel } from "../vfio-user/device.ts";
import { commandName } from "../vfio-user/protocol.ts";
import { startServer, type TraceEvent, type VfioUserServer } from "../vfio-user/server.ts";
import { startControlServer } from "./control-socket.ts";
import { LineBatch } from "./line-batch.ts";
import { traceFailureLine } from "./trace-failure.ts";
import type { SERVER_TRACE_SRC } from "./trace-line.ts";

const USAGE = [
  "usage: main.ts --socket-path PATH [--socket-path PATH ...] [--device hil-testdev|erdma]",
  "               [--mac MAC ...] [--profile NAME|FILE ...] [--trace FILE|- ...] [--quiet]",
  "               [--dma-timeout-ms N] [--exit-with-parent] [--control PATH] [--queue-engine LIB]",
  "  one device per --socket-path; erdma: one --mac per --socket-path (same order), all erdma",
  "  devices of the process on one fabric; --profile and --trace: once for all, or once per device",
].join("\n");
/** how often --exit-with-parent looks for its parent */
const PARENT_POLL_MS = 500;
/** how long closing the servers may take before the process kills itself */
const STOP_GRACE_MS = 5000;
const DEVICE_KINDS = ["hil-testdev", "erdma"] as const;
type DeviceKind = (typeof DEVICE_KINDS)[number];

/** Bad command-line arguments: main() prints the message and the usage, and exits 2. */
export class UsageError extends Error {}

/** One device of the process, as the command line asks for it. */
export interface DevicePlan {
  /** names the device in the trace (`dev`) */
  name: string;
  socketPath: string;
  /** erdma: the guest NIC's MAC */
  mac?: string;
  /** erdma: a profile name or file */
  profile?: string;
  /** a trace file, "-" for stderr, or none */
  trace?: string;
}

export interface ServerPlan {
  kind: DeviceKind;
  devices: DevicePlan[];
  quiet: boolean;
  dmaTimeoutMs?: number;
  exitWithParent: boolean;
  /** erdma: the control socket (faults, state) for every device of the process */
  controlPath?: string;
  /** erdma: the shared library of the verilated queue engine every device of the process uses */
  queueEngine?: string;
}

/** One value for every device, or one per device; `what` names the option in the error. */
function perDevice(values: readonly string[], count: number, what: string): (string | undefined)[] {
  if (values.length === 0) return Array.from({ length: count }, () => undefined);
  if (values.length === 1) return Array.from({ length: count }, () => values[0]);
  if (values.length === count) return [...values];
  throw new UsageError(
    `${values.length} ${what} options for ${count} --socket-path options: give one for all devices, or one per device`,
  );
}

function duplicate(values: readonly string[]): string | undefined {
  return values.find((v, i) => values.indexOf(v) !== i);
}

/** Parses and checks the command line; throws UsageError naming the bad option. Help: `undefined`. */
export function parseServerArgs(argv: readonly string[]): ServerPlan | undefined {
  let parsed: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      args: [...argv],
      options: {
        "socket-path": { type: "string", multiple: true },
        device: { type: "string", default: "hil-testdev" },
        mac: { type: "string", multiple: true },
        profile: { type: "string", multiple: true },
        trace: { type: "string", multiple: true },
        quiet: { type: "boolean", default: false },
        "dma-timeout-ms": { type: "string" },
        "exit-with-parent": { type: "boolean", default: false },
        control: { type: "string" },
        "queue-engine": { type: "string" },
        help: { type: "boolean", default: false },
      },
      strict: true,
    });
  }
  try {
    parsed = parse();
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const v = parsed.values;
  if (v.help) return undefined;
  const sockets = v["socket-path"] ?? [];
  if (sockets.length === 0) throw new UsageError("--socket-path is required");
  if (v.control !== undefined && v.device !== "erdma")
    throw new UsageError("--control belongs to --device erdma");
  if (v.control === "") throw new UsageError("--control must not be empty");
  if (v.control !== undefined && sockets.includes(v.control))
    throw new UsageError(`--control ${v.control} is also a --socket-path`);
  if (sockets.some((s) => s === "")) throw new UsageError("--socket-path must not be empty");
  const sameSocket = duplicate(sockets.map((s) => resolve(s)));
  if (sameSocket) throw new UsageError(`--socket-path ${sameSocket} is given twice: one socket per device`);
  const kind = v.device as DeviceKind;
  if (!DEVICE_KINDS.includes(kind))
    throw new UsageError(`unknown device ${v.device} (known: ${DEVICE_KINDS.join(", ")})`);
  const macs = v.mac ?? [];
  const profiles = v.profile ?? [];
  if (v["queue-engine"] !== undefined && kind !== "erdma")
    throw new UsageError("--queue-engine belongs to --device erdma");
  if (kind !== "erdma" && (macs.length || profiles.length))
    throw new UsageError("--mac and --profile belong to --device erdma");
  if (kind === "erdma") {
    if (macs.length === 0) throw new UsageError("--device erdma needs --mac (the guest NIC's MAC address)");
    if (macs.length !== sockets.length)
      throw new UsageError(
        `${macs.length} --mac for ${sockets.length} --socket-path: erdma needs one --mac per --socket-path, in the same order`,
      );
    macs.forEach((mac, i) => {
      try {
        parseMac(mac);
      } catch (err) {
        throw new UsageError(`--mac (device ${i + 1}, ${sockets[i]}): ${(err as Error).message}`);
      }
    });
    const sameMac = duplicate(macs.map((m) => m.toLowerCase().replaceAll("-", ":")));
    if (sameMac) throw new UsageError(`--mac ${sameMac} is given twice: each device needs its own MAC`);
  }
  const profileOf = perDevice(profiles, sockets.length, "--profile");
  const traceOf = perDevice(v.trace ?? [], sockets.length, "--trace");
  const dmaTimeout = v["dma-timeout-ms"];
  if (dmaTimeout !== undefined && !/^\d+$/.test(dmaTimeout))
    throw new UsageError(`bad --dma-timeout-ms ${dmaTimeout} (want a whole number of milliseconds)`);
  const base = kind === "erdma" ? "erdma" : kind;
  return {
    kind,
    devices: sockets.map((socketPath, i) => ({
      name: sockets.length === 1 ? base : `${base}${i}`,
      socketPath,
      ...(kind === "erdma" ? { mac: macs[i] } : {}),
      ...(profileOf[i] !== undefined ? { profile: profileOf[i] } : {}),
      ...(traceOf[i] !== undefined ? { trace: traceOf[i] } : {}),
    })),
    quiet: v.quiet ?? false,
    ...(dmaTimeout !== undefined ? { dmaTimeoutMs: Number(dmaTimeout) } : {}),
    exitWithParent: v["exit-with-parent"] ?? false,
    ...(v.control !== undefined ? { controlPath: v.control } : {}),
    ...(v["queue-engine"] !== undefined ? { queueEngine: v["queue-engine"] } : {}),
  };
}

const bigintAsHex = (_k: string, v: unknown) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v);

/** JSON with bigints as hex strings. */
export function traceLine(e: object): string {
  // A replacer takes JSON.stringify off its fast path, and most events hold no bigint: try without
  // one; a bigint (at the top, seen here, or nested, which makes JSON.stringify throw) needs it.
  for (const v of Object.values(e)) if (typeof v === "bigint") return JSON.stringify(e, bigintAsHex);
  try {
    return JSON.stringify(e);
  } catch (err) {
    if (err instanceof TypeError) return JSON.stringify(e, bigintAsHex);
    throw err;
  }
}

type TraceSink = (event: Record<string, unknown>) => void;

interface BuiltDevice {
  device: DeviceModel;
  /** which server events go to the trace (default: all) */
  keep?: (e: TraceEvent) => boolean;
  /** which commands' recv/send events `keep` keeps (by name): the server builds no others */
  keepCommand?: (command: string) => boolean;
}

/** The profiles of the plan, loaded before anything listens: a bad one is a usage error naming its device. */
function loadProfiles(plan: ServerPlan): Map<string, ErdmaProfile> {
  const loaded = new Map<string, ErdmaProfile>();
  if (plan.kind !== "erdma") return loaded;
  for (const d of plan.devices) {
    const name = d.profile ?? DEFAULT_PROFILE;
    if (loaded.has(name)) continue;
    try {
      loaded.set(name, loadProfile(name));
    } catch (err) {
      const why = isHilError(err) ? err.format() : (err as Error).message;
      throw new UsageError(`--profile (device ${d.name}, ${d.socketPath}): ${why}`);
    }
  }
  return loaded;
}

function buildDevice(
  plan: ServerPlan,
  d: DevicePlan,
  profiles: Map<string, ErdmaProfile>,
  fabric: Fabric | undefined,
  now: () => number,
  trace: TraceSink | undefined,
): BuiltDevice {
  if (plan.kind === "hil-testdev") return { device: createTestDevice() };
  return {
    device: new ErdmaVfioDevice({
      mac: d.mac as string,
      profile: profiles.get(d.profile ?? DEFAULT_PROFILE),
      name: d.name,
      now,
      trace: trace ? (e) => trace(e as unknown as Record<string, unknown>) : undefined,
      ...(fabric ? { fabric } : {}),
      ...(plan.queueEngine ? { engine: loadRtlEngine(plan.queueEngine) } : {}),
    }),
    keep: keepServerEvent,
    keepCommand: keepServerCommand,
  };
}

/**
 * One write stream per distinct trace target ("-" is stderr). A file's lines are written in
 * batches (line-batch.ts); stderr's at once, in their place among the server's warnings. A trace
 * file that cannot be written (a full disk) stops with one line on stderr; the device goes on
 * serving the guest.
 */
class TraceFiles {
  private readonly streams = new Map<string, WriteStream | NodeJS.WriteStream>();
  private readonly batches = new Map<string, LineBatch>();
  private readonly broken = new Set<string>();

  sink(target: string | undefined): TraceSink | undefined {
    if (target === undefined) return undefined;
    let out = this.streams.get(target);
    if (!out) {
      out = target === "-" ? process.stderr : this.open(target);
      this.streams.set(target, out);
    }
    const stream = out;
    if (target === "-")
      return (e) => {
        if (!this.broken.has(target)) stream.write(`${traceLine(e)}\n`);
      };
    let batch = this.batches.get(target);
    if (!batch) {
      batch = new LineBatch((text) => {
        if (!this.broken.has(target)) stream.write(text);
      });
      this.batches.set(target, batch);
    }
    const lines = batch;
    return (e) => {
      if (!this.broken.has(target)) lines.push(`${traceLine(e)}\n`);
    };
  }

  private open(target: string): WriteStream {
    const stream = createWriteStream(target, { flags: "a" });
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (this.broken.has(target)) return;
      this.broken.add(target);
      process.stderr.write(`${traceFailureLine(target, err)}\n`);
    });
    return stream;
  }

  /** Every line traced so far is in its file once this settles (the batches written, the writes done). */
  async sync(): Promise<void> {
    for (const batch of this.batches.values()) batch.flush();
    await Promise.all(
      [...this.streams.values()]
        .filter((s): s is WriteStream => s !== process.stderr && !s.destroyed)
        .map((s) => new Promise<void>((resolve) => s.write("", () => resolve()))),
    );
  }

  async close(): Promise<void> {
    for (const batch of this.batches.values()) batch.flush();
    await Promise.all(
      [...this.streams.values()]
        .filter((s): s is WriteStream => s !== process.stderr && !s.destroyed)
        .map((s) => new Promise<void>((r) => s.end(r))),
    );
  }
}

function usage(message: string): never {
  process.stderr.write(`vfio-user server: ${message}\n${USAGE}\n`);
  process.exit(2);
}

export async function main(): Promise<void> {
  let plan: ServerPlan | undefined;
  let profiles: Map<string, ErdmaProfile>;
  try {
    plan = parseServerArgs(process.argv.slice(2));
    profiles = plan ? loadProfiles(plan) : new Map();
  } catch (err) {
    if (err instanceof UsageError) usage(err.message);
    throw err;
  }
  if (!plan) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const traces = new TraceFiles();
  const fabric = plan.kind === "erdma" && plan.devices.length > 1 ? new Fabric() : undefined;
  const tagged = plan.kind === "erdma" || plan.devices.length > 1;
  const servers: VfioUserServer[] = [];
  const controlled = new Map<string, ControlledDevice>();
  let control: { close(): Promise<void> } | undefined;
  const quiet = plan.quiet;
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    // the last resort if a receive worker cannot be woken: the parent (or the next run) removes the sockets
    setTimeout(() => process.kill(process.pid, "SIGKILL"), STOP_GRACE_MS).unref();
    await Promise.all(servers.map((s) => s.close()));
    await control?.close();
    await traces.close();
    process.exit(code);
  };
  process.on("SIGTERM", () => void stop(0));
  process.on("SIGINT", () => void stop(0));
  // Exiting with a receive worker blocked in accept4/recvmsg never finishes (Node joins its
  // threads), so every way out goes through stop(), which wakes and ends them first.
  // stdout/stderr are pipes to the parent: once it is gone a write fails with EPIPE.
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => void stop(0));
  const fatal = (err: unknown) => {
    try {
      process.stderr.write(`vfio-user server: ${err instanceof Error ? err.stack : String(err)}\n`);
    } catch {
      // stderr is gone too
    }
    void stop(1);
  };
  process.on("uncaughtException", fatal);
  process.on("unhandledRejection", fatal);
  for (const d of plan.devices) {
    const sink = traces.sink(d.trace);
    const built = buildDevice(plan, d, profiles, fabric, now, sink);
    if (built.device instanceof ErdmaVfioDevice) controlled.set(d.name, built.device);
    const keep = built.keep;
    const keepCommand = built.keepCommand;
    const label = plan.devices.length > 1 ? ` ${d.name}` : "";
    try {
      servers.push(
        await startServer({
          socketPath: d.socketPath,
          device: built.device,
          dmaTimeoutMs: plan.dmaTimeoutMs,
          ...(sink && keepCommand ? { traceCommand: (c: number) => keepCommand(commandName(c)) } : {}),
          trace: sink
            ? (e) => {
                if (!keep) sink(tagged ? { ...e, dev: d.name } : e);
                // one clock for the core's events and the server's; the mark the trace's readers
                // look for (checked, not imported: the process does not load the readers' schema)
                else if (keep(e))
                  sink({ ...e, t: now(), dev: d.name, src: "vfio-user" satisfies typeof SERVER_TRACE_SRC });
              }
            : undefined,
          log: (level, text) => {
            if (level === "warn" || !quiet) process.stderr.write(`[vfio-user${label} ${level}] ${text}\n`);
          },
        }),
      );
    } catch (err) {
      process.stderr.write(`vfio-user server: cannot listen on ${d.socketPath}: ${(err as Error).message}\n`);
      await stop(1);
      return;
    }
  }
  if (plan.controlPath) {
    try {
      control = await startControlServer(plan.controlPath, controlled, { sync: () => traces.sync() });
    } catch (err) {
      process.stderr.write(
        `vfio-user server: cannot listen on ${plan.controlPath}: ${(err as Error).message}\n`,
      );
      await stop(1);
      return;
    }
  }
  // every socket (and the control socket) accepts connections before the parent hears of any
  for (const d of plan.devices) process.stdout.write(`listening ${d.socketPath}\n`);
  if (plan.exitWithParent) {
    const parent = process.ppid;
    // an orphan is re-parented (to init or a subreaper): its parent pid changes
    setInterval(() => {
      if (process.ppid !== parent) void stop(0);
    }, PARENT_POLL_MS).unref();
  }
}

/** True when node runs this file (not when a test imports parseServerArgs, nor in hil's bundle: bin/cli-bundle.mjs). */
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) await main();
