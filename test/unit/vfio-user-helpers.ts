// Shared setup for the vfio-user unit tests: a server for hil-testdev on a temp socket, fake clients.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestDevice } from "../../qemu/testdev/device.ts";
import { VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { startServer, type TraceEvent, type VfioUserServer } from "../../qemu/vfio-user/server.ts";

export interface Harness {
  dir: string;
  socket: string;
  server: VfioUserServer;
  device: TestDevice;
  trace: (TraceEvent & { t: number })[];
  warnings: string[];
  clients: VfioUserClient[];
  /** a connected client; negotiated unless `negotiate: false` */
  client(opts?: { negotiate?: boolean; caps?: object }): Promise<VfioUserClient>;
  close(): Promise<void>;
}

export async function startHarness(
  opts: { dmaTimeoutMs?: number; maxDataXfer?: number } = {},
): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-test-"));
  // A test that fails half way still leaves nothing behind.
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", removeDir);
  const socket = join(dir, "dev.sock");
  const device = new TestDevice();
  const trace: (TraceEvent & { t: number })[] = [];
  const warnings: string[] = [];
  const server = await startServer({
    socketPath: socket,
    device,
    trace: (e) => trace.push(e),
    log: (level, text) => {
      if (level === "warn") warnings.push(text);
    },
    ...opts,
  });
  const h: Harness = {
    dir,
    socket,
    server,
    device,
    trace,
    warnings,
    clients: [],
    async client(o = {}) {
      const c = VfioUserClient.connect(socket);
      h.clients.push(c);
      await server.waitForClient();
      if (o.negotiate !== false) await c.negotiate(o.caps);
      return c;
    },
    async close() {
      for (const c of h.clients) await c.close();
      await server.close();
      if (existsSync(socket)) throw new Error("server left its socket behind");
      removeDir();
      process.removeListener("exit", removeDir);
    },
  };
  return h;
}

/** Waits until `cond` holds (polling), or throws after `ms`. */
export async function until(cond: () => boolean, ms = 3000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Waits for the server to see its client go, so the next client is served. */
export async function waitDisconnected(h: Harness): Promise<void> {
  await until(() => !h.server.connected, 3000, "the server to drop its client");
}

/**
 * Runs `body` on a fresh harness with one negotiated client; then closes the client, waits for the
 * server to see it go and closes the harness (which checks nothing is left behind). Returns the
 * closed harness, for what its trace and stats say afterwards.
 */
export async function withClient(body: (c: VfioUserClient, h: Harness) => Promise<void>): Promise<Harness> {
  const h = await startHarness();
  const c = await h.client();
  await body(c, h);
  await c.close();
  await waitDisconnected(h);
  await h.close();
  return h;
}
