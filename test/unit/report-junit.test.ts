// JUnit XML of a run directory: well-formed (checked by a small parser here), counts that add up,
// every verdict's element, and text that survives markup and control characters.
import { fileURLToPath } from "node:url";
import t from "tap";
import { renderJunit } from "../../harness/report/junit.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { NASTY, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

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
  const doc = parseXml(renderJunit(await loadRunDir(FIXTURE)));
  t.equal(doc.name, "testsuites");
  const suites = all(doc, "testsuite");
  t.same(
    suites.map((s) => s.attrs.name),
    ["device-probes", "drain-sq-idle", "fault-stall-sq-drain", "partial-post-rq-overflow"],
  );
  const cases = all(doc, "testcase");
  t.equal(Number(doc.attrs.tests), cases.length);
  t.equal(cases.length, 6 + 3 * 3 * 11);
  t.equal(Number(doc.attrs.failures), 0);
  const xfail = all(doc, "skipped").filter((s) => s.attrs.type === "xfail");
  t.ok(xfail.length >= 2, "XFAIL rules are skipped with type xfail");
  t.match(xfail.map((x) => x.text).join("\n"), /__ib_drain_sq/, "with the hung task's stack");
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
    NASTY.replace("\u0001", ""),
    "the message survives, minus the control character",
  );
  t.match(failures[0]?.text, /line 2/);
  t.same(
    all(doc, "error")
      .map((e) => e.attrs.type)
      .sort(),
    ["ERROR", "MISS"],
  );
  t.equal(Number(doc.attrs.errors), 2);
  t.equal(Number(doc.attrs.failures), 1);
  t.ok(all(doc, "system-out").some((o) => /XPASS/.test(o.text)));
  t.equal(all(doc, "skipped").length, 1, "SKIP");
});
