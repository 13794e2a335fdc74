// The device server's control channel: fault requests reach the device's fault plan (and its
// trace), bad requests get one error naming what is wrong, and the socket goes away on close.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { controlRequest, startControlServer } from "../../qemu/device-server/control-socket.ts";
import { type ControlledDevice, handleControl } from "../../qemu/erdma/control.ts";
import { FaultPlan } from "../../qemu/erdma/faults.ts";
import { type ErdmaTraceEvent, Tracer } from "../../qemu/erdma/trace.ts";

function device(name: string, events: ErdmaTraceEvent[]): ControlledDevice {
  return {
    faults: new FaultPlan(
      new Tracer(
        (e) => events.push(e),
        () => 0,
        name,
      ),
    ),
    snapshot: () => ({ qps: [] }),
  };
}

t.test("requests act on the named device", async (t) => {
  const events: ErdmaTraceEvent[] = [];
  const devs = new Map([
    ["erdma0", device("erdma0", events)],
    ["erdma1", device("erdma1", [])],
  ]);
  const r = handleControl(
    devs,
    JSON.stringify({ op: "fault", device: "erdma0", fault: { kind: "drop-cqe", qpn: 3 } }),
  );
  t.same(r, { ok: true, id: 1 });
  t.match(events, [
    { kind: "fault", action: "armed", id: 1, fault: { kind: "drop-cqe", qpn: 3, nth: 1, count: 1 } },
  ]);
  t.match(handleControl(devs, '{"op":"faults","device":"erdma0"}'), {
    ok: true,
    faults: [{ kind: "drop-cqe" }],
  });
  t.same(handleControl(devs, '{"op":"faults","device":"erdma1"}'), { ok: true, faults: [] });
  t.same(handleControl(devs, '{"op":"clear","device":"erdma0"}'), { ok: true });
  t.same(handleControl(devs, '{"op":"faults","device":"erdma0"}'), { ok: true, faults: [] });
  t.same(handleControl(devs, '{"op":"snapshot","device":"erdma1"}'), { ok: true, state: { qps: [] } });
});

t.test("bad requests: one error each, naming what", async (t) => {
  const one = new Map([["erdma0", device("erdma0", [])]]);
  const two = new Map([...one, ["erdma1", device("erdma1", [])]]);
  const cases: Array<[Map<string, ControlledDevice>, string, RegExp]> = [
    [one, "not json", /not JSON/],
    [one, '{"op":"explode"}', /op/],
    [one, '{"op":"fault","device":"nope","fault":{"kind":"drop-cqe"}}', /no device "nope"/],
    [two, '{"op":"clear"}', /name a device: erdma0, erdma1/],
    [one, '{"op":"fault","fault":{"kind":"teleport"}}', /fault: kind/],
    [one, '{"op":"fault","fault":{"kind":"error-wqe","status":0}}', /fault: status/],
    [one, '{"op":"fault","fault":{"kind":"delay-cqe","ms":-1}}', /fault: ms/],
    [one, '{"op":"fault","fault":{"kind":"stall-queue"}}', /fault: queue/],
  ];
  for (const [devs, line, want] of cases) {
    const r = handleControl(devs, line);
    t.equal(r.ok, false, line);
    if (!r.ok) t.match(r.error, want, line);
  }
  t.same(handleControl(one, '{"op":"faults"}'), { ok: true, faults: [] }, "one device needs no name");
});

t.test("over a socket, and nothing left after close", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-control-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "control.sock");
  const events: ErdmaTraceEvent[] = [];
  const server = await startControlServer(path, new Map([["erdma0", device("erdma0", events)]]));
  t.ok(existsSync(path));
  t.same(await controlRequest(path, { op: "fault", fault: { kind: "lose-irq", vector: 1 } }), {
    ok: true,
    id: 1,
  });
  t.match(await controlRequest(path, { op: "fault", fault: {} }), { ok: false, error: /kind/ });
  t.match(await controlRequest(path, { op: "faults" }), {
    ok: true,
    faults: [{ kind: "lose-irq", vector: 1 }],
  });
  t.equal(events.length, 1, "the armed fault is in the device trace");
  await server.close();
  t.notOk(existsSync(path), "the socket is removed");
  await t.rejects(controlRequest(path, { op: "faults" }), /control .*control\.sock/);
});

t.test("sync answers once the server's traces are written; replies keep their requests' order", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-control-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "control.sock");
  const order: string[] = [];
  const server = await startControlServer(path, new Map([["erdma0", device("erdma0", [])]]), {
    sync: async () => {
      await new Promise((r) => setTimeout(r, 50));
      order.push("synced");
    },
  });
  t.teardown(() => server.close());
  t.same(await controlRequest(path, { op: "sync" }), { ok: true });
  t.same(order, ["synced"], "the reply came after the writes");
  // two requests on one connection: the slow sync's reply first
  const replies = await new Promise<string[]>((resolve, reject) => {
    const sock = createConnection(path);
    let got = "";
    sock.setEncoding("utf8");
    sock.on("data", (d: string) => {
      got += d;
      const lines = got.split("\n").filter(Boolean);
      if (lines.length === 2) {
        sock.end();
        resolve(lines);
      }
    });
    sock.on("error", reject);
    sock.write(`${JSON.stringify({ op: "sync" })}\n${JSON.stringify({ op: "faults" })}\n`);
  });
  t.same(
    replies.map((l) => JSON.parse(l)),
    [{ ok: true }, { ok: true, faults: [] }],
  );
  const bare = await startControlServer(join(dir, "bare.sock"), new Map([["erdma0", device("erdma0", [])]]));
  t.teardown(() => bare.close());
  t.same(await controlRequest(join(dir, "bare.sock"), { op: "sync" }), {
    ok: false,
    error: "this server keeps no trace to sync",
  });
});
