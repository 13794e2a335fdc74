/**
 * The erdma device's control requests: what the harness asks of the devices during a run (arm and
 * clear faults, read state), carried by the device server's control channel, one JSON request
 * per line, one JSON reply per line:
 *
 *   {"op":"fault","device":"erdma0","fault":{"kind":"drop-cqe","qpn":3}}  -> {"ok":true,"id":1}
 *   {"op":"clear","device":"erdma0"}                                     -> {"ok":true}
 *   {"op":"faults","device":"erdma0"}                                    -> {"ok":true,"faults":[...]}
 *   {"op":"snapshot","device":"erdma0"}                                  -> {"ok":true,"state":{...}}
 *   {"op":"idle"}                                   -> {"ok":true,"idle":{"quietMs":612,"owed":[]}}
 *   {"op":"release","device":"erdma0"}                                   -> {"ok":true,"qps":[2,3]}
 *
 * The device server answers one more of its own (control-socket.ts): {"op":"sync"} -> {"ok":true}
 * once its hardware trace files hold every line traced before the request.
 *
 * `device` may be left out when the server holds one device; `idle` without one answers for every
 * device of the server together (idle.ts combinedIdle: a peer's device counts). A bad request gets {"ok":false,
 * "error":"..."} naming what was wrong.
 */
import { z } from "zod";
import type { FaultPlan } from "./faults.ts";
import { combinedIdle, type IdleReport } from "./idle.ts";

export interface ControlledDevice {
  faults: FaultPlan;
  /** the device state as JSON (undefined before a client attached) */
  snapshot(): unknown;
  /** how long it has been quiet and what it still owes by itself (idle.ts) */
  idle?(): IdleReport;
  /** after a judged hang: flushes what its QPs in ERROR hold (release.ts); the QPs released */
  release?(): number[];
}

const Request = z.discriminatedUnion("op", [
  z.object({ op: z.literal("fault"), device: z.string().optional(), fault: z.unknown() }),
  z.object({ op: z.literal("clear"), device: z.string().optional() }),
  z.object({ op: z.literal("faults"), device: z.string().optional() }),
  z.object({ op: z.literal("snapshot"), device: z.string().optional() }),
  z.object({ op: z.literal("idle"), device: z.string().optional() }),
  z.object({ op: z.literal("release"), device: z.string().optional() }),
]);

export type ControlReply = { ok: true; [k: string]: unknown } | { ok: false; error: string };

function describe(err: unknown): string {
  if (err instanceof z.ZodError) {
    return err.issues
      .map((i) => `${i.path.length ? i.path.join(".") : "(request)"}: ${i.message}`)
      .join("; ");
  }
  return err instanceof Error ? err.message : String(err);
}

/** Handles one request line (pure apart from the devices it acts on). */
export function handleControl(devices: ReadonlyMap<string, ControlledDevice>, line: string): ControlReply {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { ok: false, error: "the request is not JSON" };
  }
  const parsed = Request.safeParse(json);
  if (!parsed.success) return { ok: false, error: describe(parsed.error) };
  const req = parsed.data;
  if (req.op === "idle" && req.device === undefined) return idleOfAll(devices);
  let device: ControlledDevice | undefined;
  if (req.device === undefined) {
    if (devices.size !== 1) return { ok: false, error: `name a device: ${[...devices.keys()].join(", ")}` };
    device = [...devices.values()][0];
  } else device = devices.get(req.device);
  if (!device)
    return { ok: false, error: `no device "${req.device}" (have ${[...devices.keys()].join(", ")})` };
  try {
    switch (req.op) {
      case "fault":
        return { ok: true, id: device.faults.add(req.fault) };
      case "clear":
        device.faults.clear();
        return { ok: true };
      case "faults":
        return { ok: true, faults: device.faults.active };
      case "snapshot":
        return { ok: true, state: device.snapshot() ?? null };
      case "release":
        return device.release
          ? { ok: true, qps: device.release() }
          : { ok: false, error: "this device cannot release QPs" };
      case "idle":
        return device.idle
          ? { ok: true, idle: device.idle() }
          : { ok: false, error: "this device cannot tell whether it is idle" };
    }
  } catch (err) {
    return { ok: false, error: `fault: ${describe(err)}` };
  }
}

/** Every device's idle report as one; refused when a device cannot tell. */
function idleOfAll(devices: ReadonlyMap<string, ControlledDevice>): ControlReply {
  const reports = new Map<string, IdleReport>();
  for (const [name, d] of devices) {
    if (!d.idle) return { ok: false, error: `device "${name}" cannot tell whether it is idle` };
    reports.set(name, d.idle());
  }
  if (reports.size === 0) return { ok: false, error: "no device to ask" };
  return { ok: true, idle: combinedIdle(reports) };
}
