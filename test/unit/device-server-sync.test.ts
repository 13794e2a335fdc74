// The device server process's control request sync: once it answers, the hardware trace file holds
// every line traced before it (the server writes its lines in 5 ms batches), so the harness can cut
// a scenario's slice of the trace at once instead of waiting for the file to stop growing.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { controlRequest } from "../../qemu/device-server/control-socket.ts";
import { startServerProcess } from "../../qemu/device-server/process.ts";

t.test("sync: every line traced before it is in the file when it answers", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-sync-test-"));
  const traceFile = join(dir, "hw-trace.jsonl");
  const controlPath = join(dir, "control.sock");
  const server = await startServerProcess({
    socketPath: join(dir, "erdma.sock"),
    device: "erdma",
    mac: "52:54:00:12:34:56",
    traceFile,
    controlPath,
  });
  t.teardown(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const armed = () => (readFileSync(traceFile, "utf8").match(/"action":"armed"/g) ?? []).length;
  for (let i = 1; i <= 20; i++) {
    t.match(await controlRequest(controlPath, { op: "fault", fault: { kind: "lose-irq", vector: 1 } }), {
      ok: true,
    });
    t.same(await controlRequest(controlPath, { op: "sync" }), { ok: true });
    t.equal(armed(), i, `after sync ${i}: ${i} armed line(s) in the file`);
  }
});
