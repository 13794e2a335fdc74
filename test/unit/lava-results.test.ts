// Reading the LAVA runner's lines back from a job's log: plain console text or LAVA's log.yaml,
// other console output ignored, each batch checked against the digest the runner printed.
import { createHash } from "node:crypto";
import t from "tap";
import { stringify } from "yaml";
import { flowLogLines, logLines, parseLavaResults, unescapeLavaConsole } from "../../harness/lava/results.ts";

const md5 = (lines: string[]) =>
  createHash("md5")
    .update(`${lines.join("\n")}\n`)
    .digest("hex");
const A = ['{"ev":"cmd","id":1}', '{"version":1,"last_done":1}'];
const B = ['{"version":1,"last_done":2}'];

function runnerLines(sumA = md5(A), sumB = md5(B)): string[] {
  return [
    "HIL-LAVA plan abc123 2",
    "HIL-LAVA begin one",
    ...A.map((l) => `HIL-LAVA a ${l}`),
    ...B.map((l) => `HIL-LAVA b ${l}`),
    "HIL-LAVA rc 0 0",
    "HIL-LAVA dmesg [    1.0] hil-mark",
    `HIL-LAVA end one ${sumA} ${sumB}`,
    "HIL-LAVA notrun two scenario one left the executor stuck before it",
    "HIL-LAVA done",
  ];
}

t.test("plain console text: carriage returns and other lines between", async (t) => {
  const text = runnerLines()
    .map((l, i) => (i === 3 ? `[   5.1] erdma: some message\r\n${l}\r` : `${l}\r`))
    .join("\n");
  const r = parseLavaResults(text, "console.log");
  t.equal(r.digest, "abc123");
  t.equal(r.done, true);
  const one = r.scenarios.get("one");
  t.ok(one, "scenario one read");
  t.equal(one?.damaged, undefined);
  t.equal(one?.a, `${A.join("\n")}\n`);
  t.equal(one?.b, `${B.join("\n")}\n`);
  t.equal(one?.aRc, 0);
  t.equal(one?.dmesg, "[    1.0] hil-mark\n");
  t.equal(r.notRun.get("two"), "scenario one left the executor stuck before it");
});

t.test("LAVA's log.yaml: the target lines' messages", async (t) => {
  const entries = [
    { dt: "2026-12-03T10:00:00", lvl: "info", msg: "start: 1 tmpfs-deploy" },
    ...runnerLines().map((msg) => ({ dt: "2026-12-03T10:00:01", lvl: "target", msg })),
  ];
  const text = stringify(entries, { flow: false }).replace(/^- dt/gm, "- dt");
  t.ok(logLines(text, "log.yaml").includes("HIL-LAVA done"));
  const r = parseLavaResults(text, "log.yaml");
  t.equal(r.scenarios.get("one")?.damaged, undefined);
  t.equal(r.done, true);
});

/** A console line as LAVA's ShellLogger logs it (lava_dispatcher/shell.py): quotes escaped, CR and ESC dropped. */
const lavaEscaped = (line: string) => line.replaceAll("\r", "").replaceAll('"', '\\"').replaceAll("\x1b", "");

t.test(
  "a real LAVA log: the console's quotes escaped in target entries are read back as printed",
  async (t) => {
    const entries = [
      { dt: "2026-12-03T10:00:00", lvl: "debug", msg: 'a "debug" entry keeps its \\" as written' },
      ...runnerLines().map((msg) => ({ dt: "2026-12-03T10:00:01", lvl: "target", msg: lavaEscaped(msg) })),
    ];
    const text = stringify(entries, { flow: false });
    const r = parseLavaResults(text, "log.yaml");
    t.equal(r.scenarios.get("one")?.damaged, undefined, "the digests hold after unescaping");
    t.equal(r.scenarios.get("one")?.a, `${A.join("\n")}\n`);
    t.ok(
      logLines(text, "log.yaml").includes('a "debug" entry keeps its \\" as written'),
      "other levels as they are",
    );
    t.equal(
      unescapeLavaConsole(lavaEscaped('say \\"x\\" "y"')),
      'say \\"x\\" "y"',
      "a backslash the guest printed stays",
    );
  },
);

t.test("lava-run's own output: a YAML flow mapping a line, tags and escapes included", async (t) => {
  const flow = (lvl: string, msg: string) =>
    `{"dt": "2026-12-06T12:16:42", "lvl": "${lvl}", "msg": ${JSON.stringify(msg)}}`;
  const text = [
    '{"dt": "2026-12-06T12:15:56", "lvl": "results", "msg": {"case": "file-download", "extra": {"size": ! "2360320"}, "result": "pass"}}',
    flow("info", "start: 2 boot-image-retry"),
    '{"dt": "2026-12-06T12:16:00", "lvl": "target", "msg": "\\e[6nhil# "}',
    ...runnerLines().map((l) => flow("target", lavaEscaped(l))),
    "Traceback (most recent call last):",
  ].join("\n");
  const r = parseLavaResults(text, "lava-run");
  t.equal(r.done, true);
  t.equal(r.scenarios.get("one")?.damaged, undefined);
  t.same(flowLogLines(text, { consoleOnly: true }).slice(0, 2), ["\x1b[6nhil# ", "HIL-LAVA plan abc123 2"]);
  t.ok(
    flowLogLines(text).includes("Traceback (most recent call last):"),
    "a line that is no entry is kept as it is",
  );
});

t.test("a line changed on the way, or a batch cut: damaged, with why", async (t) => {
  const changed = runnerLines().map((l) => l.replace('"id":1', '"id":7'));
  t.match(
    parseLavaResults(changed.join("\n"), "x").scenarios.get("one")?.damaged,
    /first batch.*digest differs/,
  );
  const second = runnerLines().map((l) => l.replace('"last_done":2', '"last_done":3'));
  t.match(
    parseLavaResults(second.join("\n"), "x").scenarios.get("one")?.damaged,
    /second batch.*digest differs/,
  );
  const cut = runnerLines().slice(0, 4);
  const r = parseLavaResults(cut.join("\n"), "x");
  t.match(r.scenarios.get("one")?.damaged, /stops before the runner's end line/);
  t.equal(r.done, false);
});

t.test("a console that strips trailing blanks keeps an empty batch line", async (t) => {
  const emptyA = [""];
  const lines = [
    "HIL-LAVA plan p 1",
    "HIL-LAVA begin e",
    "HIL-LAVA a",
    `HIL-LAVA end e ${md5(emptyA)} ${md5([""])}`,
  ];
  const e = parseLavaResults(lines.join("\n"), "x").scenarios.get("e");
  t.equal(e?.damaged, undefined);
  t.equal(e?.b, undefined, "no second batch");
});

t.test("no runner output: no digest, nothing read", async (t) => {
  const r = parseLavaResults("Linux version 6.12\nlogin:\nHIL-LAVAX not ours\n", "x");
  t.equal(r.digest, undefined);
  t.equal(r.scenarios.size, 0);
});

t.test("a log.yaml that is not a list is one clear error", async (t) => {
  t.throws(() => logLines("- dt: [unclosed\n", "job/log.yaml"), /job\/log.yaml: not a LAVA log/);
});
