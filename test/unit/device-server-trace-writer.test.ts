// How the device server writes its hardware trace: lines in batches (qemu/device-server/line-batch.ts),
// in order, written after a short delay or at once when many are pending or on flush; and
// traceLine's JSON, bigints as hex strings wherever they sit, the same text as with a replacer.
import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { BATCH_DELAY_MS, BATCH_MAX_CHARS, LineBatch } from "../../qemu/device-server/line-batch.ts";
import { traceLine } from "../../qemu/device-server/main.ts";

t.test("a batch keeps the lines' order and writes them once, after the delay", async (t) => {
  const writes: string[] = [];
  const batch = new LineBatch((text) => writes.push(text));
  batch.push("a\n");
  batch.push("b\n");
  batch.push("c\n");
  t.same(writes, [], "nothing is written at once");
  await sleep(BATCH_DELAY_MS * 10);
  t.same(writes, ["a\nb\nc\n"], "one write of the three lines");
  batch.push("d\n");
  batch.flush();
  t.same(writes, ["a\nb\nc\n", "d\n"], "flush writes what is pending now");
  batch.flush();
  await sleep(BATCH_DELAY_MS * 10);
  t.same(writes, ["a\nb\nc\n", "d\n"], "nothing pending: no empty write, no late write");
});

t.test("many pending bytes are written without waiting", async (t) => {
  const writes: string[] = [];
  const batch = new LineBatch((text) => writes.push(text));
  const line = `${"x".repeat(1023)}\n`;
  for (let i = 0; i < BATCH_MAX_CHARS / line.length; i++) batch.push(line);
  t.equal(writes.length, 1, "written as soon as the limit is reached");
  t.equal(writes[0]?.length, BATCH_MAX_CHARS);
  batch.push("tail\n");
  batch.flush();
  t.same(writes.slice(1), ["tail\n"]);
});

t.test("traceLine: JSON, bigints as hex strings at the top and nested", async (t) => {
  const replaced = (e: object) =>
    JSON.stringify(e, (_k, v) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v));
  const events: object[] = [
    { t: 1.5, dev: "erdma", kind: "reg-read", offset: 0, size: 4, name: "VERSION", value: "0x10000" },
    { kind: "dma", access: "read", address: 0x1000n, length: 8, path: "shared", t: 2 },
    { kind: "device", event: "x", detail: { address: 0xffff_ffff_ffff_ffffn, list: [1n, "2"] }, t: 3 },
    { kind: "note", text: 'a "quoted" line\n', t: 4 },
  ];
  for (const e of events) t.equal(traceLine(e), replaced(e));
  t.equal(
    traceLine({ detail: { address: 0xabn } }),
    '{"detail":{"address":"0xab"}}',
    "a nested bigint as a hex string",
  );
  const loop: Record<string, unknown> = {};
  loop.self = loop;
  t.throws(() => traceLine(loop), TypeError, "a cycle still throws");
});
