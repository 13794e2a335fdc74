/**
 * The device server's control channel: a UNIX socket beside the vfio-user sockets on which the
 * harness drives the devices during a run. One JSON request per line, one JSON reply per line:
 *
 *   {"op":"fault","device":"erdma0","fault":{"kind":"drop-cqe","qpn":3}}  -> {"ok":true,"id":1}
 *   {"op":"clear","device":"erdma0"}                                     -> {"ok":true}
 *   {"op":"faults","device":"erdma0"}                                    -> {"ok":true,"faults":[...]}
 *   {"op":"snapshot","device":"erdma0"}                                  -> {"ok":true,"state":{...}}
 *
 * `device` may be left out when the server holds one device. A bad request gets {"ok":false,
 * "error":"..."} naming what was wrong; the connection stays usable.
 */
import { rmSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { z } from "zod";
import type { FaultPlan } from "./faults.ts";

export interface ControlledDevice {
  faults: FaultPlan;
  /** the device state as JSON (undefined before a client attached) */
  snapshot(): unknown;
}

const Request = z.discriminatedUnion("op", [
  z.object({ op: z.literal("fault"), device: z.string().optional(), fault: z.unknown() }),
  z.object({ op: z.literal("clear"), device: z.string().optional() }),
  z.object({ op: z.literal("faults"), device: z.string().optional() }),
  z.object({ op: z.literal("snapshot"), device: z.string().optional() }),
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
    }
  } catch (err) {
    return { ok: false, error: `fault: ${describe(err)}` };
  }
}

/** Listens on `path` (removed first if stale, and on close). */
export async function startControlServer(
  path: string,
  devices: ReadonlyMap<string, ControlledDevice>,
): Promise<{ close(): Promise<void> }> {
  rmSync(path, { force: true });
  const server: Server = createServer((sock) => {
    let buf = "";
    sock.setEncoding("utf8");
    sock.on("data", (chunk: string) => {
      buf += chunk;
      if (buf.length > 1 << 20) {
        sock.destroy();
        return;
      }
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) sock.write(`${JSON.stringify(handleControl(devices, line), bigintHex)}\n`);
      }
    });
    sock.on("error", () => sock.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          rmSync(path, { force: true });
          resolve();
        });
      }),
  };
}

function bigintHex(_k: string, v: unknown): unknown {
  return typeof v === "bigint" ? `0x${v.toString(16)}` : v;
}

/** Sends one request to a control socket and returns its reply (rejects on I/O errors or timeout). */
export function controlRequest(
  path: string,
  req: Record<string, unknown>,
  timeoutMs = 5000,
): Promise<ControlReply> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    let buf = "";
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`control ${path}: no reply in ${timeoutMs} ms`));
    }, timeoutMs);
    sock.setEncoding("utf8");
    sock.on("connect", () => sock.write(`${JSON.stringify(req)}\n`));
    sock.on("data", (chunk: string) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl < 0) return;
      clearTimeout(timer);
      sock.end();
      try {
        resolve(JSON.parse(buf.slice(0, nl)) as ControlReply);
      } catch (err) {
        reject(err);
      }
    });
    sock.on("error", (err) => {
      clearTimeout(timer);
      reject(new Error(`control ${path}: ${err.message}`));
    });
  });
}
