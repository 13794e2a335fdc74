/**
 * The device server's control channel: a UNIX socket beside the vfio-user sockets on which the
 * harness drives the devices during a run, one JSON request per line and one JSON reply per line
 * (the requests: qemu/erdma/control.ts). A bad request gets its error reply and the connection
 * stays usable.
 */
import { rmSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { type ControlledDevice, type ControlReply, handleControl } from "../erdma/control.ts";

/** What the server does beside its devices: `sync` puts every line traced so far in its file. */
export interface ServerControl {
  sync?(): Promise<void>;
}

/**
 * Listens on `path` (removed first if stale, and on close). Beside the devices' requests,
 * {"op":"sync"} -> {"ok":true} once every hardware trace line written before it is in its file
 * (the server writes them in batches, qemu/device-server/line-batch.ts). Replies keep the order of
 * their requests.
 */
export async function startControlServer(
  path: string,
  devices: ReadonlyMap<string, ControlledDevice>,
  extra: ServerControl = {},
): Promise<{ close(): Promise<void> }> {
  rmSync(path, { force: true });
  const reply = async (line: string): Promise<ControlReply> => {
    if (isSync(line)) {
      if (!extra.sync) return { ok: false, error: "this server keeps no trace to sync" };
      await extra.sync();
      return { ok: true };
    }
    return handleControl(devices, line);
  };
  const server: Server = createServer((sock) => {
    let buf = "";
    let last: Promise<unknown> = Promise.resolve();
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
        if (!line) continue;
        last = last.then(async () => {
          const r = await reply(line).catch((err: Error) => ({ ok: false, error: err.message }));
          if (!sock.destroyed) sock.write(`${JSON.stringify(r, bigintHex)}\n`);
        });
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

function isSync(line: string): boolean {
  try {
    return (JSON.parse(line) as { op?: unknown } | null)?.op === "sync";
  } catch {
    return false;
  }
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
