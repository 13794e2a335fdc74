/**
 * Runs one vfio-user device server as its own process, following the spec's "Backend Program
 * Conventions": --socket-path=PATH, no daemonizing, SIGTERM honoured.
 *
 *   node --import tsx qemu/vfio-user/main.ts --socket-path /tmp/dev.sock [--device hil-testdev|erdma]
 *        [--mac XX:XX:XX:XX:XX:XX] [--profile NAME|FILE] [--trace FILE|-] [--quiet] [--dma-timeout-ms N]
 *        [--exit-with-parent]
 *
 * --mac and --profile are the erdma device's: the MAC of the guest NIC it pairs with (required) and
 * its behaviour profile (fixtures/profiles/<name>.json, default erdma-reflush). The trace is JSON
 * lines; for erdma it holds the core's hardware events (register accesses, doorbells, commands,
 * state changes, queue elements, interrupts) and the server's session-level events (marked
 * "src":"vfio-user"), each with `t`, milliseconds since the server started.
 * --exit-with-parent stops the server (as SIGTERM would) once the process that started it is gone,
 * even if that one was killed without a chance to stop it.
 *
 * Prints "listening <path>" on stdout once the socket accepts connections. Exits 0 on SIGTERM or
 * SIGINT after removing the socket; 2 on bad arguments.
 */
import { createWriteStream, type WriteStream } from "node:fs";
import { parseArgs } from "node:util";
import { isHilError } from "../../harness/util/errors.ts";
import { parseMac } from "../erdma/device.ts";
import { DEFAULT_PROFILE, loadProfile } from "../erdma/profile-file.ts";
import { ErdmaVfioDevice, keepServerEvent } from "../erdma/vfio-user-device.ts";
import { createTestDevice } from "../testdev/device.ts";
import type { DeviceModel } from "./device.ts";
import { startServer, type TraceEvent } from "./server.ts";

const USAGE =
  "usage: main.ts --socket-path PATH [--device hil-testdev|erdma] [--mac MAC] [--profile NAME|FILE] [--trace FILE|-] [--quiet] [--dma-timeout-ms N] [--exit-with-parent]";
/** how often --exit-with-parent looks for its parent */
const PARENT_POLL_MS = 500;

interface DeviceArgs {
  mac?: string;
  profile?: string;
  /** writes one trace line (an object with a timestamp `t` in ms) */
  trace?: (event: Record<string, unknown>) => void;
  now: () => number;
}

interface BuiltDevice {
  device: DeviceModel;
  /** which server events go to the trace (default: all) */
  keep?: (e: TraceEvent) => boolean;
}

const DEVICES: Record<string, (a: DeviceArgs) => BuiltDevice> = {
  "hil-testdev": () => ({ device: createTestDevice() }),
  erdma: (a) => {
    if (!a.mac) usage("--device erdma needs --mac (the guest NIC's MAC address)");
    try {
      parseMac(a.mac);
    } catch (err) {
      usage(`--mac: ${(err as Error).message}`);
    }
    const profile = loadProfile(a.profile ?? DEFAULT_PROFILE);
    const trace = a.trace;
    return {
      device: new ErdmaVfioDevice({
        mac: a.mac,
        profile,
        now: a.now,
        trace: trace ? (e) => trace(e as unknown as Record<string, unknown>) : undefined,
      }),
      keep: keepServerEvent,
    };
  },
};

function usage(message: string): never {
  process.stderr.write(`vfio-user server: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/** JSON with bigints as hex strings. */
export function traceLine(e: object): string {
  return JSON.stringify(e, (_k, v) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v));
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parse>;
  function parse() {
    return parseArgs({
      options: {
        "socket-path": { type: "string" },
        device: { type: "string", default: "hil-testdev" },
        mac: { type: "string" },
        profile: { type: "string" },
        trace: { type: "string" },
        quiet: { type: "boolean", default: false },
        "dma-timeout-ms": { type: "string" },
        "exit-with-parent": { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
      strict: true,
    });
  }
  try {
    args = parse();
  } catch (err) {
    usage((err as Error).message);
  }
  if (args.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const socketPath = args.values["socket-path"];
  if (!socketPath) usage("--socket-path is required");
  const make = DEVICES[args.values.device ?? ""];
  if (!make) usage(`unknown device ${args.values.device}`);
  if (args.values.device !== "erdma" && (args.values.mac || args.values.profile))
    usage("--mac and --profile belong to --device erdma");
  let traceOut: WriteStream | NodeJS.WriteStream | undefined;
  if (args.values.trace === "-") traceOut = process.stderr;
  else if (args.values.trace) traceOut = createWriteStream(args.values.trace, { flags: "a" });
  const out = traceOut;
  const quiet = args.values.quiet;
  const dmaTimeout = args.values["dma-timeout-ms"];
  if (dmaTimeout !== undefined && !/^\d+$/.test(dmaTimeout)) usage(`bad --dma-timeout-ms ${dmaTimeout}`);
  const t0 = performance.now();
  let built: BuiltDevice;
  try {
    built = make({
      mac: args.values.mac,
      profile: args.values.profile,
      now: () => performance.now() - t0,
      trace: out ? (e) => out.write(`${traceLine(e)}\n`) : undefined,
    });
  } catch (err) {
    usage(isHilError(err) ? err.format() : (err as Error).message);
  }
  const keep = built.keep;
  const server = await startServer({
    socketPath,
    device: built.device,
    dmaTimeoutMs: dmaTimeout === undefined ? undefined : Number(dmaTimeout),
    trace: out
      ? (e) => {
          if (!keep) out.write(`${traceLine(e)}\n`);
          // one clock for the core's events and the server's
          else if (keep(e))
            out.write(`${traceLine({ ...e, t: performance.now() - t0, src: "vfio-user" })}\n`);
        }
      : undefined,
    log: (level, text) => {
      if (level === "warn" || !quiet) process.stderr.write(`[vfio-user ${level}] ${text}\n`);
    },
  });
  process.stdout.write(`listening ${socketPath}\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.close();
    if (out && out !== process.stderr) await new Promise<void>((r) => (out as WriteStream).end(r));
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  if (args.values["exit-with-parent"]) {
    const parent = process.ppid;
    // an orphan is re-parented (to init or a subreaper): its parent pid changes
    setInterval(() => {
      if (process.ppid !== parent) void stop();
    }, PARENT_POLL_MS).unref();
  }
}

await main();
