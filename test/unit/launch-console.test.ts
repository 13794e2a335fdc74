import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { ConsoleFollower } from "../../qemu/launch/console.ts";
import { freeLoopbackPort, isHostForwardFailure } from "../../qemu/launch/ports.ts";

function tempLog(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), "hil-console-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "console.log");
}

t.test("follows a growing log, splits lines, finds markers already seen or yet to come", async (t) => {
  const log = tempLog(t);
  const follower = new ConsoleFollower(log, 10);
  follower.start();
  const seen: string[] = [];
  follower.onLine((l) => seen.push(l));
  writeFileSync(log, "[    0.000000] Linux version 6.12\r\nhil-init: mounting");
  follower.poll();
  t.same(
    follower.tail(5),
    ["[    0.000000] Linux version 6.12", "hil-init: mounting"],
    "the partial line is in the tail",
  );
  const early = await follower.waitFor(/Linux version (\S+)/).promise;
  t.equal(early.match[1], "6.12");
  const ready = follower.waitFor(/HIL-GUEST-READY (\S+)/);
  appendFileSync(log, " done\nHIL-GUEST-");
  appendFileSync(log, "READY 6.12.0\n");
  // the poll timer is unref'd (QEMU's process keeps a real run alive); keep this test alive meanwhile
  const keepAlive = setTimeout(() => {}, 1000);
  const m = await ready.promise;
  clearTimeout(keepAlive);
  t.equal(m.match[1], "6.12.0");
  t.same(seen, ["[    0.000000] Linux version 6.12", "hil-init: mounting done", "HIL-GUEST-READY 6.12.0"]);
  follower.stop();
  t.equal(
    follower.text(),
    "[    0.000000] Linux version 6.12\nhil-init: mounting done\nHIL-GUEST-READY 6.12.0\n",
  );
});

t.test("a missing log is not an error until it appears; multi-byte text survives chunking", async (t) => {
  const log = tempLog(t);
  const follower = new ConsoleFollower(log, 10);
  follower.poll();
  t.same(follower.tail(3), []);
  t.equal(follower.text(), "");
  writeFileSync(log, Buffer.from("é"));
  follower.poll();
  appendFileSync(log, "x\nlast");
  follower.stop();
  t.same(follower.tail(3), ["éx", "last"]);
  const cancelled = follower.waitFor(/never/);
  cancelled.cancel();
});

t.test("free ports and QEMU's hostfwd complaint", async (t) => {
  const port = await freeLoopbackPort();
  t.ok(port > 1024 && port < 65536);
  t.ok(
    isHostForwardFailure(
      "qemu-system-x86_64: -netdev user,id=net0,hostfwd=tcp:127.0.0.1:5555-:22: Could not set up host forwarding rule 'tcp:127.0.0.1:5555-:22'",
    ),
  );
  t.notOk(isHostForwardFailure("qemu-system-x86_64: terminating on signal 15"));
});
