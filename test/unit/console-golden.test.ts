// The console parser against its golden files: every test/fixtures/console/<name>.log (a real
// console log captured from a guest; its first line says how) must parse to exactly
// <name>.expected.json. A new report format is a new pair of files (test/support/console-capture.ts
// captures one and writes both; test/support/console-golden.ts rewrites an expected file by hand).
// This test never writes expectations.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import {
  expectedPathOf,
  GOLDEN_DIR,
  goldenOf,
  listGolden,
  REAL_HEADER,
  readGolden,
  renderFrame,
} from "../support/console-golden.ts";

const folder = listGolden();

t.test("every log has its expected parse and every expected parse its log", async (t) => {
  t.ok(folder.pairs.length > 0, `golden pairs in ${GOLDEN_DIR}`);
  for (const name of folder.logsWithoutExpected)
    t.fail(
      `${name}.log has no ${name}.expected.json (write it: node --import tsx test/support/console-golden.ts)`,
    );
  for (const name of folder.expectedWithoutLog) t.fail(`${name}.expected.json has no ${name}.log`);
  t.same(folder.strays, [], "nothing else in the folder");
});

for (const name of folder.pairs) {
  t.test(name, async (t) => {
    const { log, expected } = readGolden(name);
    t.match(log.split("\n")[0], REAL_HEADER, "the first line says how the log was captured");
    t.same(goldenOf(log), expected, `the parse of ${name}.log is ${name}.expected.json`);
  });
}

t.test("the walk itself: unpaired files and a changed parse are caught", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "console-golden-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = "# REAL console log (x): test\n[ 1.0] Kernel panic - not syncing: x\n";
  writeFileSync(join(dir, "a.log"), log);
  writeFileSync(join(dir, "a.expected.json"), JSON.stringify(goldenOf(log)));
  writeFileSync(join(dir, "b.log"), log);
  writeFileSync(join(dir, "c.expected.json"), "{}");
  writeFileSync(join(dir, "a.log.full"), log);
  t.same(listGolden(dir), {
    pairs: ["a"],
    logsWithoutExpected: ["b"],
    expectedWithoutLog: ["c"],
    strays: ["a.log.full"],
  });
  const { expected } = readGolden("a", dir);
  t.same(goldenOf(log), expected);
  t.notSame(goldenOf(log.replace("panic", "panik")), expected, "a different parse does not compare equal");
  writeFileSync(join(dir, "a.expected.json"), "{");
  t.throws(() => readGolden("a", dir), { message: /not valid JSON/ });
  t.equal(expectedPathOf("/x/y.log"), "/x/y.expected.json");
  t.throws(() => expectedPathOf("/x/y.txt"), { message: /no \.log suffix/ });
});

t.test("renderFrame writes a frame back as the trace shows it", async (t) => {
  t.equal(
    renderFrame({ fn: "__ib_drain_sq", offset: 0x11a, size: 0x124, module: "ib_core", reliable: false }),
    "? __ib_drain_sq+0x11a/0x124 [ib_core]",
  );
  t.equal(renderFrame({ fn: "kthread", offset: 0x96, size: 0x9e, reliable: true }), "kthread+0x96/0x9e");
});
