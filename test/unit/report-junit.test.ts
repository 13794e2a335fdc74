// JUnit XML of a run directory, read by a JUnit consumer: junitparser (Debian's
// python3-junitparser, installed when missing) reads every testcase's outcome, message and time
// and computes the counts from the testcases. A strict little parser here checks the structure.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import t from "tap";
import { renderJunit } from "../../harness/report/junit.ts";
import { loadRunDir, type RunDir } from "../../harness/rundir/read.ts";
import { NASTY, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { type JRSuite, junitparserRead } from "../support/junitparser.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const MUTANT = fileURLToPath(new URL("../fixtures/rundir-mutant", import.meta.url));

interface El {
  name: string;
  attrs: Record<string, string>;
  children: El[];
  text: string;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
function unescapeXml(s: string): string {
  if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(s)) throw new Error(`bad entity in ${s.slice(0, 60)}`);
  return s.replace(/&(amp|lt|gt|quot|apos|#\d+);/g, (_, e: string) =>
    e.startsWith("#") ? String.fromCharCode(Number(e.slice(1))) : (ENTITIES[e] as string),
  );
}

/** A strict little XML parser: one root, balanced tags, quoted attributes, known entities only. */
function parseXml(xml: string): El {
  const body = xml.replace(/^<\?xml [^?]*\?>\s*/, "");
  // biome-ignore lint/suspicious/noControlCharactersInRegex: XML 1.0 forbids them
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(body)) throw new Error("a control character");
  const root: El = { name: "#root", attrs: {}, children: [], text: "" };
  const stack: El[] = [root];
  const re = /<(\/?)([A-Za-z][\w.-]*)((?:\s+[\w.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  while (pos < body.length) {
    re.lastIndex = pos;
    m = re.exec(body);
    if (!m) throw new Error(`not XML at ${pos}: ${body.slice(pos, pos + 40)}`);
    pos = re.lastIndex;
    const top = stack.at(-1) as El;
    if (m[5] !== undefined) {
      top.text += unescapeXml(m[5]);
      continue;
    }
    const [, close, name, attrText, selfClose] = m as unknown as [string, string, string, string, string];
    if (close) {
      if (top.name !== name) throw new Error(`</${name}> closes <${top.name}>`);
      stack.pop();
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of attrText.matchAll(/([\w.-]+)="([^"]*)"/g)) {
      if ((a[1] as string) in attrs) throw new Error(`duplicate attribute ${a[1]}`);
      attrs[a[1] as string] = unescapeXml(a[2] as string);
    }
    const el: El = { name, attrs, children: [], text: "" };
    top.children.push(el);
    if (!selfClose) stack.push(el);
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack.at(-1)?.name}>`);
  if (root.children.length !== 1) throw new Error("not one root element");
  return root.children[0] as El;
}

const all = (e: El, name: string): El[] => [
  ...(e.name === name ? [e] : []),
  ...e.children.flatMap((c) => all(c, name)),
];

t.test("the checker refuses broken XML", async (t) => {
  t.throws(() => parseXml("<a><b></a>"));
  t.throws(() => parseXml('<a x="1 & 2"/>'));
  t.throws(() => parseXml("<a>\u0001</a>"));
  t.same(parseXml('<a x="&lt;"/>').attrs, { x: "<" });
});

t.test("the real run: a suite per scenario, counts that add up", async (t) => {
  const run = await loadRunDir(FIXTURE);
  const doc = parseXml(renderJunit(run));
  t.equal(doc.name, "testsuites");
  const suites = all(doc, "testsuite");
  t.same(
    suites.map((s) => s.attrs.name),
    ["device-probes", "drain-sq-idle", "fault-stall-sq-drain", "partial-post-rq-overflow"],
  );
  const cases = all(doc, "testcase");
  t.equal(Number(doc.attrs.tests), cases.length);
  // this record predates `applies`: its SKIP rules are all listed as having nothing to judge
  const judged = (run.record.scenarios ?? []).flatMap((s) =>
    s.judgements.flatMap((j) => j.rules.filter((r) => r.verdict !== "SKIP")),
  );
  t.equal(
    cases.length,
    6 + 3 + judged.length,
    "probe checks, an execution per scenario, the rules that judged",
  );
  t.equal(Number(doc.attrs.failures), 0);
  t.equal(Number(doc.attrs.skipped), 0, "XFAIL is not skipped");
  const xfail = all(doc, "system-out").filter((o) => /^XFAIL/.test(o.text));
  t.ok(xfail.length >= 2, "XFAIL rules pass with a system-out saying so");
  t.match(xfail.map((x) => x.text).join("\n"), /enqueue_timer/, "with the hung task's stack");
  const props = Object.fromEntries(
    all(suites[1] as El, "property").map((p) => [p.attrs.name, p.attrs.value]),
  );
  t.match(props, {
    kernel: "debian:6.12",
    "kernel.release": "6.12.95",
    driver: "erdma",
    "device.profile": "erdma-reflush",
  });
  for (const s of suites)
    t.equal(Number(s.attrs.tests), all(s, "testcase").length, `${s.attrs.name}: tests attribute`);
});

t.test("every verdict's element, and escaping", async (t) => {
  const doc = parseXml(renderJunit(await loadRunDir(await writeRunDir(syntheticRecord()))));
  const failures = all(doc, "failure");
  t.equal(failures.length, 1);
  t.equal(
    failures[0]?.attrs.message,
    `rule 1 under ib: ${NASTY.replace("\u0001", "")}`,
    "the message names the rule and survives, minus the control character",
  );
  t.match(failures[0]?.text, /line 2/);
  t.same(
    all(doc, "error")
      .map((e) => e.attrs.type)
      .sort(),
    ["ERROR", "ERROR", "MISS"],
    "the broken run's execution and its rule, the scenario not run",
  );
  t.equal(Number(doc.attrs.errors), 3);
  t.equal(Number(doc.attrs.failures), 1);
  t.ok(all(doc, "system-out").some((o) => /^XPASS/.test(o.text)));
  t.same(
    all(doc, "skipped").map((s) => s.attrs.message),
    ["not meant for siw"],
    "SKIP: the scenario that did not apply",
  );
});

/** The real mutant run with the synthetic ERROR, MISS, SKIP and XPASS scenarios added. */
async function everyVerdictRun(opts: { strict?: boolean } = {}): Promise<RunDir> {
  const real = JSON.parse(await readFile(`${MUTANT}/verdicts.json`, "utf8"));
  const synthetic = syntheticRecord() as {
    scenarios: Array<{ name: string }>;
    results: Array<{ id: string }>;
  };
  const added = synthetic.scenarios.filter((s) => s.name !== "s-fail");
  const names = new Set(added.map((s) => s.name));
  real.scenarios.push(...added);
  real.results.push(...synthetic.results.filter((r) => names.has(r.id.replace(/\[.*$/, ""))));
  if (opts.strict) real.strict = true;
  return loadRunDir(await writeRunDir(real));
}

const wrName = (w: { qp: string; queue: string; wrId: number }) =>
  w.wrId < 0 ? `${w.qp} ${w.queue} drain marker` : `${w.qp} ${w.queue} WR ${w.wrId}`;

t.test("junitparser reads real times, outcomes, the rule and its WRs", async (t) => {
  const run = await everyVerdictRun();
  const read = await junitparserRead(renderJunit(run));
  t.same(read.computed, read.written, "the counts and time written are those junitparser computes");
  for (const s of read.suites) t.same(s.computed, s.written, `${s.name}: counts and time add up`);

  const scenarios = run.record.scenarios ?? [];
  const suite = (name: string) => read.suites.find((s) => s.name === name) as JRSuite;
  const caseOf = (classname: string, name: string) =>
    read.suites.flatMap((s) => s.cases).find((c) => c.classname === classname && c.name === name);
  let total = 0;
  for (const s of scenarios) {
    const seconds = (s.durationMs ?? 0) / 1000;
    total += seconds;
    t.equal(suite(s.name).written.time, seconds, `${s.name}: the suite's time is the scenario's`);
    t.equal(caseOf(s.name, "execution")?.time, seconds, `${s.name}: its execution's time`);
  }
  t.ok(
    scenarios.filter((s) => (s.durationMs ?? 0) > 1000).length >= 2,
    "real runs take seconds: the fixture's times are not zero",
  );
  t.equal(read.written.time, Number(total.toFixed(3)), "the run's time is the scenarios' times");

  const skipped = read.suites.flatMap((s) => s.cases).filter((c) => c.outcome === "skipped");
  const notApplying = scenarios.flatMap((s) =>
    s.judgements.flatMap((j) =>
      j.rules
        .filter((r) => r.applies === false)
        .map((r) => ({ classname: `${s.name}.${j.profile}`, name: `rule ${r.rule}: ${r.title}` })),
    ),
  );
  const notMeant = scenarios
    .filter((s) => s.outcome?.verdict === "SKIP")
    .map((s) => ({ classname: s.name, name: "execution" }));
  t.same(
    skipped
      .map((c) => ({ classname: c.classname, name: c.name }))
      .sort((a, b) => a.classname.localeCompare(b.classname)),
    [...notApplying, ...notMeant].sort((a, b) => a.classname.localeCompare(b.classname)),
    "skipped: exactly the rules the oracle profile does not judge and the scenario not meant for this run",
  );
  t.ok(
    skipped.every((c) => c.message && c.message.length > 0),
    "each skipped test case says why",
  );

  let failures = 0;
  for (const s of scenarios)
    for (const j of s.judgements)
      for (const r of j.rules) {
        const c = caseOf(`${s.name}.${j.profile}`, `rule ${r.rule}: ${r.title}`);
        const where = `${s.name} ${j.profile} rule ${r.rule} (${r.verdict})`;
        if (r.verdict === "FAIL") {
          failures++;
          t.equal(c?.outcome, "failure", where);
          t.match(
            c?.message,
            new RegExp(`^rule ${r.rule} under ${j.profile}: `),
            `${where}: the message names the rule`,
          );
          const wrs = [...new Set((r.problems ?? []).flatMap((p) => (p.wrs ?? []).map(wrName)))];
          t.ok(wrs.length > 0, `${where}: the record names the WRs`);
          for (const w of wrs.slice(0, 8)) t.match(c?.message, w, `${where}: the message names ${w}`);
          for (const w of wrs) t.match(c?.text, w, `${where}: the text names ${w}`);
          t.match(c?.text, r.citation ?? "", `${where}: and the rule's citation`);
        }
        if (r.verdict === "XFAIL") {
          t.equal(c?.outcome, "passed", where);
          // records of hil before the cause was recorded say neither
          const cause = r.injectedFault
            ? /^XFAIL \(the scenario's injected fault broke it, as intended\): rule /
            : r.knownBug
              ? /^XFAIL \(known bug .+, failed as recorded\): rule /
              : /^XFAIL \(failed as recorded\): rule /;
          t.match(c?.system_out, cause, `${where}: says why it failed as expected`);
        }
        if (r.verdict === "MISS" || r.verdict === "ERROR") {
          t.equal(c?.outcome, "error", where);
          t.equal(c?.type, r.verdict, where);
        }
        if (r.verdict === "PASS") t.equal(c?.outcome, "passed", where);
        if (r.verdict === "XPASS") t.equal(c?.outcome, "passed", `${where}: passes outside --strict`);
      }
  t.ok(failures >= 4, "the fixture has real FAILs");
  t.equal(caseOf("s-error", "execution")?.outcome, "error", "a run that broke is an error");
  t.equal(caseOf("s-miss", "execution")?.type, "MISS", "a scenario not run is a MISS error");
  t.match(suite("post-send-in-error").system_out, /rule 2 \(no receive posted in ERROR\) under ib/);
  t.match(suite("drain-rq-idle").properties, { driver: "erdma", "device.profile": "erdma-reflush" });
});

t.test("junitparser: an XPASS under --strict is a failure", async (t) => {
  const read = await junitparserRead(renderJunit(await everyVerdictRun({ strict: true })));
  const xpass = read.suites.find((s) => s.name === "s-xpass")?.cases.filter((c) => c.name.startsWith("rule"));
  t.same(
    xpass?.map((c) => [c.outcome, c.type]),
    [["failure", "XPASS"]],
  );
});

t.test("junitparser reads markup, control characters and repeated ]]> in reasons and evidence", async (t) => {
  const record = syntheticRecord() as {
    scenarios: Array<{ judgements: Array<{ rules: Array<Record<string, unknown>> }> }>;
  };
  const rule = record.scenarios[0]?.judgements[0]?.rules[0] as Record<string, unknown>;
  rule.evidence = [NASTY, "a ]]> b ]]> c", "<![CDATA[ x ]]>"];
  const read = await junitparserRead(renderJunit(await loadRunDir(await writeRunDir(record))));
  const c = read.suites.flatMap((s) => s.cases).find((x) => x.outcome === "failure");
  t.equal(c?.message, `rule 1 under ib: ${NASTY.replace("\u0001", "")}`);
  t.match(c?.text, "a ]]> b ]]> c");
  t.match(c?.text, "<![CDATA[ x ]]>");
});
