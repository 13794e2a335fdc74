/**
 * What a guest running an untrusted kernel can reach of the host, on a real guest: nothing but its
 * own forwarded SSH port. A TCP server on the host's 127.0.0.1 (standing for any loopback service:
 * another guest's SSH forward, a developer's web server) is not reachable from the guest at
 * 10.0.2.2 (QEMU's user network, restrict=on), nor is the guest's own forward seen from inside,
 * while the harness's SSH into the guest works. And what already held: the SSH forward listens on
 * 127.0.0.1 only, the guest's and the device's temp dirs are 0700, the SSH key 0600, and all of
 * them are gone once the guest is.
 */
import { readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import t from "tap";
import { bootPrepared } from "../../harness/boot.ts";
import { bootArtifacts, gone } from "../support/guest.ts";

t.setTimeout(30 * 60 * 1000);

const HOST = "10.0.2.2";
const SECRET = "host-only-secret";

/** A host service on 127.0.0.1 that counts who connects and answers a secret. */
async function loopbackService() {
  let connections = 0;
  const server = createServer((sock) => {
    connections++;
    sock.on("error", () => {});
    sock.end(`HTTP/1.0 200 OK\r\n\r\n${SECRET}\n`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    connections: () => connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The local IPv4 addresses listening on `port` (/proc/net/tcp, state 0A = LISTEN). */
function listeners(port: number): string[] {
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[3] === "0A" && Number.parseInt(f[1]?.split(":")[1] ?? "", 16) === port)
    .map((f) => {
      const hex = f[1]?.split(":")[0] ?? "";
      return [6, 4, 2, 0].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)).join(".");
    });
}

const mode = (path: string) => statSync(path).mode & 0o777;

const artifacts = await bootArtifacts();
const service = await loopbackService();
t.teardown(() => service.close());
const guest = await bootPrepared(artifacts);
let disposed = false;
t.teardown(async () => {
  if (!disposed) await guest.dispose();
});

t.test("the guest reaches no host service on 127.0.0.1, its SSH from the host works", async (t) => {
  const ssh = await guest.exec("echo reached over ssh");
  t.equal(ssh.stdout, "reached over ssh\n", "the harness's SSH into the guest works");
  // the control: the same nc gets a TCP answer where there is one (the guest's own dropbear)
  const own = await guest.exec("echo | nc -w 3 10.0.2.15 22 | head -c 64", { timeoutMs: 30_000 });
  t.match(own.stdout, /^SSH-2\.0-/, `nc connects where a server answers: ${own.stderr}`);
  const toHost = await guest.exec(
    `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${HOST} ${service.port}; echo "nc=$?"`,
    { timeoutMs: 60_000 },
  );
  t.notMatch(toHost.stdout, SECRET, `nothing came back from the host service: ${toHost.stdout}`);
  t.match(toHost.stdout, /nc=[1-9]/, "nc failed to connect");
  t.equal(service.connections(), 0, "the host service saw no connection");
  const ownForward = await guest.exec(`echo | nc -w 5 ${HOST} ${guest.sshPort} | head -c 64; echo`, {
    timeoutMs: 60_000,
  });
  t.notMatch(
    ownForward.stdout,
    /SSH-2\.0/,
    "the host's SSH forwards (its own or another guest's) are out of reach",
  );
  const after = await guest.exec("echo still here");
  t.equal(after.stdout, "still here\n", "SSH still works after the attempts");
});

t.test("what held: loopback-only SSH forward, 0700 dirs, a 0600 key", async (t) => {
  t.same(listeners(guest.sshPort), ["127.0.0.1"], "QEMU listens for SSH on 127.0.0.1 only");
  t.equal(mode(guest.workDir), 0o700, "the guest's work dir (QMP socket, key, console) is 0700");
  t.equal(mode(join(guest.workDir, "id_ed25519")), 0o600, "the per-run SSH key is 0600");
  const socketDir = guest.device ? dirname(guest.device.socketPath) : undefined;
  t.ok(socketDir, "the emulated device is attached");
  if (socketDir) t.equal(mode(socketDir), 0o700, "the device's socket dir is 0700");
  const workDir = guest.workDir;
  await guest.dispose();
  disposed = true;
  t.ok(gone(workDir), "the work dir and its key are removed with the guest");
  if (socketDir) t.ok(gone(socketDir), "the device's socket dir is removed with it");
});
