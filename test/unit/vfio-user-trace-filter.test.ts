// The server's traceCommand option: the recv/send events of the commands it refuses are not
// emitted (nor built); every other event, and the commands themselves, are as without it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Reg, TESTDEV_ID_VALUE, TestDevice } from "../../qemu/testdev/device.ts";
import { VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { Command } from "../../qemu/vfio-user/protocol.ts";
import { startServer, type TraceEvent } from "../../qemu/vfio-user/server.ts";

t.test("recv/send of filtered commands are left out, the rest traced as before", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-filter-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const trace: TraceEvent[] = [];
  const asked: number[] = [];
  const server = await startServer({
    socketPath: join(dir, "dev.sock"),
    device: new TestDevice(),
    trace: (e) => trace.push(e),
    traceCommand: (c) => {
      asked.push(c);
      return c !== Command.REGION_READ;
    },
  });
  const client = VfioUserClient.connect(join(dir, "dev.sock"));
  try {
    await server.waitForClient();
    await client.negotiate();
    t.equal(await client.read32(0, Reg.ID), TESTDEV_ID_VALUE, "the read is answered");
    await client.write32(0, Reg.SCRATCH, 0x1234);
    t.equal(await client.read32(0, Reg.SCRATCH), 0x1234);
  } finally {
    await client.close();
    await server.close();
  }
  const messages = trace.flatMap((e) =>
    e.kind === "recv" || e.kind === "send" ? [`${e.kind} ${e.command}`] : [],
  );
  t.same(
    messages,
    ["recv VERSION", "send VERSION", "recv REGION_WRITE", "send REGION_WRITE"],
    "no REGION_READ events; VERSION and REGION_WRITE as always",
  );
  t.ok(asked.includes(Command.REGION_READ), "the filter was asked about the reads");
  t.ok(
    trace.some((e) => e.kind === "connect") && trace.some((e) => e.kind === "disconnect"),
    "session events are not filtered",
  );
});
