// The wait for a server's listener, run here by the host's sh against the host's /proc/net/tcp.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { join } from "node:path";
import t from "tap";
import { startServer, untilListening, untilPortFree } from "../../harness/bench/guest-listen.ts";

function listen(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => resolve(server));
  });
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

function run(snippet: string) {
  return spawnSync("sh", ["-c", snippet], { encoding: "utf8", timeout: 10_000 });
}

t.test("returns at once when something listens on the port, IPv4 or IPv6", async (t) => {
  for (const host of ["127.0.0.1", "::1"]) {
    const server = await listen(host);
    t.teardown(() => server.close());
    const r = run(untilListening(portOf(server), 1));
    t.equal(r.status, 0, `a listener on [${host}]:${portOf(server)} is seen\n${r.stderr}`);
  }
});

t.test("exits 124 naming the port when nothing listens", async (t) => {
  const server = await listen("127.0.0.1");
  const port = portOf(server);
  await new Promise((r) => server.close(r));
  const start = Date.now();
  const r = run(untilListening(port, 1));
  t.equal(r.status, 124);
  t.equal(r.stderr.trim(), `nothing listens on TCP port ${port} after 1 s`);
  t.ok(Date.now() - start >= 900, "it waited about the second it was given");
});

t.test("a connected socket on the port is not a listener", async (t) => {
  const server = await listen("127.0.0.1");
  t.teardown(() => server.close());
  // the snippet matches the local port of LISTEN rows only: a client's ephemeral port is not one
  const client = connect(portOf(server), "127.0.0.1");
  await new Promise((r) => client.once("connect", r));
  t.teardown(() => client.destroy());
  const r = run(untilListening(client.localPort ?? 0, 1));
  t.equal(r.status, 124, "the client's own port is not taken for a listener");
});

t.test("refuses what is not a TCP port", async (t) => {
  t.throws(() => untilListening(0), /port 0: not a TCP port/);
  t.throws(() => untilListening(70000), /not a TCP port/);
});

t.test("untilPortFree returns once the listener is gone, and gives up naming the port", async (t) => {
  const server = await listen("127.0.0.1");
  const port = portOf(server);
  const held = run(untilPortFree(port, 1));
  t.equal(held.status, 124);
  t.equal(held.stderr.trim(), `TCP port ${port} is still listened on after 1 s`);
  setTimeout(() => server.close(), 300);
  const started = Date.now();
  const freed = await new Promise<number | null>((resolve) => {
    spawn("sh", ["-c", untilPortFree(port, 5)], { stdio: "ignore" }).on("exit", resolve);
  });
  t.equal(freed, 0, "free once the server closed");
  t.ok(Date.now() - started >= 250, "and not before");
});

t.test(
  "startServer waits for the last server's listener to go, starts the next and waits for its",
  async (t) => {
    const dir = t.testdir({});
    const probe = await listen("127.0.0.1");
    const port = portOf(probe);
    // a server that writes its pid, then listens after 300 ms
    const server = (name: string) =>
      `node -e 'require("fs").writeFileSync("${join(dir, name)}", String(process.pid)); setTimeout(() => require("net").createServer().listen(${port}, "127.0.0.1"), 300)'`;
    const pids: number[] = [];
    t.teardown(() => {
      for (const pid of pids) {
        try {
          process.kill(pid);
        } catch {}
      }
    });
    setTimeout(() => probe.close(), 400);
    const started = Date.now();
    const r = await new Promise<number | null>((resolve) => {
      spawn("sh", ["-c", startServer(server("s.pid"), port, join(dir, "s.log"))], { stdio: "ignore" }).on(
        "exit",
        resolve,
      );
    });
    if (existsSync(join(dir, "s.pid"))) pids.push(Number(readFileSync(join(dir, "s.pid"), "utf8")));
    t.equal(r, 0);
    t.ok(Date.now() - started >= 650, "it waited for the old listener to close, then for the new one");
    t.equal(pids.length, 1, "the server was started");
    t.equal(run(untilListening(port, 1)).status, 0, "and listens");
  },
);
