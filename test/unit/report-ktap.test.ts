// KTAP output of a run directory: parsed back with tap's own parser (tap-parser), counted, and
// the directives each verdict gets (XFAIL as TODO, SKIP, ERROR for ERROR and MISS).
import { fileURLToPath } from "node:url";
import t from "tap";
import { renderKtap } from "../../harness/report/ktap.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { NASTY, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";
import { parseTap as parse } from "../support/tap-parse.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));

t.test("the real run: one test per scenario plus the probe stage, rules nested per profile", async (t) => {
  const text = renderKtap(await loadRunDir(FIXTURE));
  t.match(text, /^KTAP version 1\n# erdma-hil: kernel debian:6\.12 \(6\.12\.95\)/);
  const { final, all } = await parse(text);
  t.equal(final.count, 4, "device-probes + 3 scenarios");
  t.equal(final.pass, 2, "device-probes and drain-sq-idle pass");
  t.equal(final.todo, 2, "the hang and the known bug are TODO (XFAIL)");
  t.equal(final.ok, true, "XFAIL does not fail the stream");
  // 6 probe checks + 3 scenarios x 3 profiles x 11 rules + 3 x 3 profile lines + top level 4
  t.equal(all.length, 6 + 99 + 9 + 4);
  t.equal((text.match(/^ {4}KTAP version 1$/gm) ?? []).length, 4, "one subtest per top-level test");
  t.equal((text.match(/^ {8}KTAP version 1$/gm) ?? []).length, 9, "one subtest per scenario and profile");
  const hang = all.find((r) => r.name.startsWith("rule-hang") && r.todo !== false && !r.ok);
  t.ok(hang, "the stuck drain is a not-ok TODO rule");
  t.match(String(hang?.todo), /known bug: expected .*did not return/);
  t.match(text, /# +stack: \[<0>\] __ib_drain_sq/, "the hung task's stack is diagnostic data");
  t.ok(
    all.some((r) => r.skip && r.name.startsWith("rule-9")),
    "rules that do not apply are SKIP",
  );
});

t.test("every verdict's result line", async (t) => {
  const text = renderKtap(await loadRunDir(await writeRunDir(syntheticRecord())));
  const { final, all } = await parse(text);
  t.equal(final.ok, false, "a FAIL fails the stream");
  t.equal(final.count, 6);
  t.match(text, /^ {8}not ok 1 rule-1 rule 1 title$/m, "FAIL is a plain not ok");
  t.ok(
    text.split("\n").some((l) => l.trim() === `# FAIL: ${NASTY}`),
    "the reason is a diagnostic line",
  );
  t.match(text, /^ {4}not ok 1 ib # ERROR not run: no control channel$/m, "MISS");
  t.match(text, /^ {8}not ok 1 rule-1 rule 1 title # ERROR trace lost$/m, "ERROR");
  t.match(text, /^ {4}ok 1 ib # SKIP not meant for siw$/m, "SKIP");
  t.match(text, /^ {8}ok 1 rule-5 rule 5 title # TODO known bug not seen: held \(erdma_qp\.c\)$/m, "XPASS");
  t.ok(
    all.some((r) => r.skip),
    "the parser sees the SKIP",
  );
  // TAP parsers do not know KTAP's ERROR directive: it stays in the name, and the line is a plain not ok
  for (const r of all) {
    const name = r.name.replace(/ \\?# ERROR .*$/, "");
    t.notMatch(name, /#/, `no # in the description "${r.name}"`);
    if (name !== r.name) t.equal(r.ok, false, "ERROR lines are not ok");
  }
});
