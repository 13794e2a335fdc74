import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { isClearLine, QUIET_AFTER_IDLE_CLEAR_MS, settledAfterClear } from "../../harness/suite/hw-trace.ts";

const LINE = `${JSON.stringify({ t: 1, dev: "erdma", kind: "doorbell", db: "sq", value: "0x1" })}\n`;
const CLEAR = `${JSON.stringify({ t: 2, dev: "erdma", kind: "fault", action: "cleared" })}\n`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function traceFile(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), "hil-hw-settle-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "hw-trace.jsonl");
  writeFileSync(file, LINE.repeat(3));
  return file;
}

t.test("the device's clear line, and nothing else, is the mark", async (t) => {
  t.ok(isClearLine(CLEAR.trim()));
  t.notOk(isClearLine(LINE.trim()));
  t.notOk(isClearLine(JSON.stringify({ kind: "fault", action: "fired", note: "cleared" })));
  t.notOk(isClearLine('{"kind":"fault","action":"cleared"'), "a line cut short");
});

t.test("the size once the clear landed and the writer paused, lines just after it included", async (t) => {
  const file = traceFile(t);
  const from = statSync(file).size;
  const started = Date.now();
  const settled = settledAfterClear(file, from);
  await sleep(15);
  appendFileSync(file, LINE);
  await sleep(15);
  appendFileSync(file, CLEAR);
  await sleep(20);
  appendFileSync(file, LINE);
  const size = await settled;
  t.equal(size, statSync(file).size);
  t.equal(size, from + 2 * LINE.length + CLEAR.length);
  t.ok(Date.now() - started >= 50 + 30, "it waited for a pause after the clear");
});

t.test("a clear before `from` is not this scenario's", async (t) => {
  const file = traceFile(t);
  appendFileSync(file, CLEAR);
  const from = statSync(file).size;
  const settled = settledAfterClear(file, from, { maxMs: 300 });
  await sleep(120);
  appendFileSync(file, CLEAR);
  const size = await settled;
  t.equal(size, from + CLEAR.length, "the one written after `from`");
});

t.test("no clear line within maxMs: the size once the writer paused", async (t) => {
  const file = traceFile(t);
  const from = statSync(file).size;
  const started = Date.now();
  const size = await settledAfterClear(file, from, { maxMs: 100 });
  t.equal(size, from);
  t.ok(Date.now() - started >= 100);
});

t.test("a shorter pause after the clear leaves a later line to the next slice", async (t) => {
  const file = traceFile(t);
  const from = statSync(file).size;
  const settled = settledAfterClear(file, from, { stepMs: QUIET_AFTER_IDLE_CLEAR_MS });
  appendFileSync(file, CLEAR);
  await sleep(QUIET_AFTER_IDLE_CLEAR_MS + 60);
  appendFileSync(file, LINE);
  t.equal(await settled, from + CLEAR.length, "the line after the pause is not this slice's");
});
