import { createServer } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it; the caller may race). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("no port assigned"))));
    });
  });
}

/** QEMU's complaint when the hostfwd port is taken; the launcher then tries another port. */
export function isHostForwardFailure(qemuOutput: string): boolean {
  return /Could not set up host forwarding rule|host forwarding rule .* failed/i.test(qemuOutput);
}
