import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { QmpClient } from "../../qemu/launch/qmp.ts";

const GREETING = {
  QMP: { version: { qemu: { major: 10, minor: 2, micro: 2 }, package: "" }, capabilities: ["oob"] },
};

interface FakeQmp {
  path: string;
  received: Array<Record<string, unknown>>;
  sockets: Socket[];
  server: Server;
}

/** A QMP server that answers like QEMU: greeting, capabilities negotiation, a few commands. */
async function fakeQmp(t: Test, opts: { greet?: boolean; dir?: string } = {}): Promise<FakeQmp> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "hil-qmp-test-"));
  const path = join(dir, "qmp.sock");
  const fake: FakeQmp = { path, received: [], sockets: [], server: createServer() };
  fake.server.on("connection", (socket) => {
    fake.sockets.push(socket);
    if (opts.greet !== false) socket.write(`${JSON.stringify(GREETING)}\r\n`);
    let buf = "";
    socket.on("data", (chunk) => {
      buf += chunk.toString();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const msg = JSON.parse(buf.slice(0, nl)) as { execute: string; id?: string; arguments?: unknown };
        buf = buf.slice(nl + 1);
        fake.received.push(msg);
        const reply = (body: object) => socket.write(`${JSON.stringify({ ...body, id: msg.id })}\r\n`);
        switch (msg.execute) {
          case "qmp_capabilities":
            reply({ return: {} });
            break;
          case "query-status":
            // an event arrives before the reply, as QEMU may interleave them
            socket.write(
              `${JSON.stringify({ event: "RTC_CHANGE", data: { offset: 1 }, timestamp: { seconds: 1, microseconds: 2 } })}\n`,
            );
            reply({ return: { status: "running", running: true } });
            break;
          case "quit":
            reply({ return: {} });
            socket.write(
              `${JSON.stringify({ event: "SHUTDOWN", data: { guest: false, reason: "host-qmp-quit" } })}\n`,
            );
            socket.end();
            break;
          case "system_powerdown":
            socket.destroy();
            break;
          default:
            reply({
              error: { class: "CommandNotFound", desc: `The command ${msg.execute} has not been found` },
            });
        }
      }
    });
  });
  await new Promise<void>((resolve) => fake.server.listen(path, resolve));
  t.teardown(async () => {
    for (const s of fake.sockets) s.destroy();
    await new Promise<void>((resolve) => fake.server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });
  return fake;
}

t.test("negotiates capabilities, runs commands, delivers events", async (t) => {
  const fake = await fakeQmp(t);
  const qmp = await QmpClient.connect(fake.path);
  t.equal(qmp.greeting?.version.qemu.major, 10);
  t.equal(fake.received[0]?.execute, "qmp_capabilities");
  const events: string[] = [];
  qmp.on("event", (ev) => events.push(ev.event));
  const status = await qmp.execute<{ status: string }>("query-status");
  t.equal(status.status, "running");
  t.same(events, ["RTC_CHANGE"]);
  t.ok(typeof fake.received[1]?.id === "string", "commands carry an id");
  qmp.close();
});

t.test("an error reply rejects with the command and QEMU's description", async (t) => {
  const fake = await fakeQmp(t);
  const qmp = await QmpClient.connect(fake.path);
  await t.rejects(qmp.execute("no-such-command", { x: 1 }), {
    name: "HilError",
    message: /QMP no-such-command failed: The command no-such-command has not been found \(CommandNotFound\)/,
  });
  t.same(fake.received[1]?.arguments, { x: 1 });
  qmp.close();
});

t.test("quit resolves and reports the shutdown event and the close", async (t) => {
  const fake = await fakeQmp(t);
  const qmp = await QmpClient.connect(fake.path);
  const shutdown = qmp.waitEvent("SHUTDOWN", 2000);
  const closed = new Promise<void>((resolve) => qmp.once("close", () => resolve()));
  await qmp.quit();
  t.match(await shutdown, { event: "SHUTDOWN", data: { reason: "host-qmp-quit" } });
  await closed;
  t.ok(qmp.isClosed);
  await t.rejects(qmp.execute("query-status"), { message: /connection is closed/ });
});

t.test("a connection lost mid-command rejects that command", async (t) => {
  const fake = await fakeQmp(t);
  const qmp = await QmpClient.connect(fake.path);
  await t.rejects(qmp.execute("system_powerdown"), { message: /QEMU closed the connection/ });
});

t.test("waits for a socket that appears late; gives up on one that never greets", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-qmp-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await t.rejects(QmpClient.connect(join(dir, "none.sock"), { timeoutMs: 300 }), {
    name: "HilError",
    message: /cannot connect to QEMU's QMP socket/,
  });
  const silent = await fakeQmp(t, { greet: false });
  await t.rejects(QmpClient.connect(silent.path, { timeoutMs: 400 }), { message: /cannot connect/ });
  const lateDir = mkdtempSync(join(tmpdir(), "hil-qmp-test-"));
  const pending = QmpClient.connect(join(lateDir, "qmp.sock"), { timeoutMs: 3000 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  await fakeQmp(t, { dir: lateDir });
  const qmp = await pending;
  t.ok(qmp.greeting);
  const timeout = qmp.waitEvent("NEVER", 50);
  await t.rejects(timeout, { message: /no QMP NEVER event within 50 ms/ });
  qmp.close();
});
