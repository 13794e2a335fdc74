// The hardware trace's reader (harness/protocol/hw-trace.ts) on lines the real device server wrote:
// test/fixtures/erdma/hw-trace-kinds-6.12.jsonl is the first line of every kind and field set in
// the hw-trace.jsonl and hw-trace-2.jsonl of `hil run` (the starter suite, debian:6.12, kernel
// executor, device profile erdma-reflush), copied verbatim. Strict mode refuses a bad line with
// the file and the line; lenient mode leaves out what is not an event, such as a torn last line.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  eventsOf,
  type HwTraceEvent,
  isServerLine,
  parseHwTrace,
  readHwTrace,
} from "../../harness/protocol/hw-trace.ts";

const FIXTURE = new URL("../fixtures/erdma/hw-trace-kinds-6.12.jsonl", import.meta.url);
const TEXT = readFileSync(FIXTURE, "utf8");
const LINES = TEXT.split("\n").filter((l) => l !== "");
const line = (pred: (e: Record<string, unknown>) => boolean): string => {
  const found = LINES.find((l) => pred(JSON.parse(l)));
  if (!found) throw new Error("no such line in the fixture");
  return found;
};
const WQE = line((e) => e.kind === "wqe");

function kindsOf(events: readonly HwTraceEvent[]): string[] {
  return [...new Set(events.map((e) => `${isServerLine(e) ? "vfio-user " : ""}${e.kind}`))].sort();
}

t.test("every line of every kind the device server wrote is an event, as written", async (t) => {
  const events = parseHwTrace(TEXT, { source: "hw-trace-kinds-6.12.jsonl" });
  t.equal(events.length, LINES.length);
  t.same(
    events.map((e) => JSON.stringify(e)),
    LINES,
    "each event is its line, fields in the writer's order",
  );
  t.same(kindsOf(events), [
    "cmd",
    "cqe",
    "doorbell",
    "eqe",
    "fault",
    "flush",
    "irq",
    "reflush",
    "reg-read",
    "reg-write",
    "state",
    "vfio-user config",
    "vfio-user connect",
    "vfio-user device",
    "vfio-user disconnect",
    "vfio-user recv",
    "vfio-user send",
    "wait",
    "wqe",
  ]);
  const wqes = eventsOf(events, "wqe");
  t.ok(wqes.length > 1 && wqes.every((w) => typeof w.status === "number" && typeof w.qpn === "number"));
});

t.test("the server's lines are told from the device's by src", async (t) => {
  // the server's irq (TraceEvent { kind: "irq" }) shares its kind with the device's; an erdma
  // trace leaves the server's out (keepServerEvent), so this line is made up in the server's format
  const serverIrq = '{"kind":"irq","vector":1,"delivered":true,"t":5.5,"dev":"erdma","src":"vfio-user"}';
  const deviceIrq = line((e) => e.kind === "irq");
  const events = parseHwTrace(`${serverIrq}\n${deviceIrq}\n`, { source: "x" });
  t.equal(events.length, 2);
  t.same(
    eventsOf(events, "irq").map((e) => e.source),
    ["cmdq"],
    "only the device's irq has a source",
  );
  t.ok(isServerLine(events[0] as HwTraceEvent));
  t.throws(
    () => parseHwTrace(`${deviceIrq.replace('"source":"cmdq"', '"source":"cmdq","src":"vfio-user"')}\n`),
    { message: /line 1 is not a vfio-user server event/ },
    "a device event marked as the server's is checked as the server's",
  );
});

t.test("strict: a malformed erdma event is one HilError naming the file and the line", async (t) => {
  const file = "/runs/x/traces/drain-sq-idle.hw.jsonl";
  const bad = (edit: (l: string) => string) => `${LINES[0]}\n${LINES[1]}\n${edit(WQE)}\n${LINES[2]}\n`;
  const cases: Array<[string, (l: string) => string, RegExp]> = [
    [
      "a status that is not a number",
      (l) => l.replace(/"status":\d+/, '"status":"flushed"'),
      /^status: .*number/m,
    ],
    ["a field missing", (l) => l.replace(/"qpn":\d+,/, ""), /^qpn: /m],
    [
      "a field the device does not write",
      (l) => l.replace('"kind":"wqe"', '"kind":"wqe","extra":1'),
      /^\(event\): Unrecognized key: "extra"/m,
    ],
    ["a queue that is not sq or rq", (l) => l.replace(/"queue":"(sq|rq)"/, '"queue":"xq"'), /^queue: /m],
    ["a kind the device does not have", (l) => l.replace('"kind":"wqe"', '"kind":"wqe2"'), /^kind: /m],
  ];
  for (const [what, edit, field] of cases) {
    t.throws(
      () => parseHwTrace(bad(edit), { source: file }),
      {
        name: "HilError",
        where: file,
        message: "hardware trace line 3 is not an erdma device event",
        detail: field,
      },
      what,
    );
  }
  t.throws(() => parseHwTrace(`${LINES[0]}\n{"t":1,\n`, { source: file }), {
    where: file,
    message: "hardware trace line 2 is not JSON",
  });
  t.throws(
    () =>
      parseHwTrace(`${line((e) => e.kind === "disconnect").replace(/,"dev":"erdma"/, "")}\n`, {
        source: file,
      }),
    { message: "hardware trace line 1 is not a vfio-user server event", detail: /^dev: /m },
    "a server line without its device",
  );
});

t.test("lenient: a torn last line (the writer is mid-line) is left out", async (t) => {
  const torn = `${TEXT}${WQE.slice(0, 40)}`;
  t.equal(parseHwTrace(torn, { lenient: true }).length, LINES.length);
  t.throws(() => parseHwTrace(torn, { source: "f" }), {
    message: `hardware trace line ${LINES.length + 1} is not JSON`,
  });

  const dir = t.testdir({});
  const file = join(dir, "hw-trace.jsonl");
  writeFileSync(file, torn);
  t.equal(readHwTrace(file, { lenient: true }).length, LINES.length, "the whole file");
  t.throws(() => readHwTrace(file), {
    where: file,
    message: `hardware trace line ${LINES.length + 1} is not JSON`,
  });
  const from = TEXT.indexOf(LINES[3] as string) + 5;
  t.same(
    readHwTrace(file, { from, lenient: true }).map((e) => JSON.stringify(e)),
    LINES.slice(4),
    "from a byte in the middle of a line: that line's tail is left out",
  );
});
