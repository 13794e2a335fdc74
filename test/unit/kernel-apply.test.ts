import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { applyPatch, hunkHeader, parsePatchOutput } from "../../harness/kernel/apply.ts";
import { run } from "../../util/exec.ts";

const failedOutput = `checking file init/main.c
checking file drivers/infiniband/hw/erdma/erdma_main.c
Hunk #2 FAILED at 648.
1 out of 2 hunks FAILED
`;

t.test("GNU patch's report: files, failed hunks, fuzz notes", async (t) => {
  const r = parsePatchOutput(failedOutput);
  t.same(r.files, ["init/main.c", "drivers/infiniband/hw/erdma/erdma_main.c"]);
  t.same(r.failures, [
    { file: "drivers/infiniband/hw/erdma/erdma_main.c", hunk: 2, line: 648, reason: "hunk does not match" },
  ]);
  const fuzz = parsePatchOutput("patching file a.c\nHunk #1 succeeded at 12 with fuzz 1 (offset 2 lines).\n");
  t.same(fuzz.notes, ["a.c: hunk #1 applied at line 12 with fuzz 1 (offset 2 lines)"]);
  const missing = parsePatchOutput(
    "can't find file to patch at input line 5\nPerhaps you used the wrong -p or --strip option?\nThe text leading up to this was:\n--------------------------\n|--- a/no/such.c\n|+++ b/no/such.c\n--------------------------\nNo file to patch.  Skipping patch.\n1 out of 1 hunk ignored\n",
  );
  t.same(missing.failures, [{ file: "no/such.c", reason: "file to patch does not exist" }]);
});

t.test("the header of a failing hunk is found in the patch text", async (t) => {
  const text = readFileSync(new URL("../../fixtures/series/does-not-apply.mbox", import.meta.url), "utf8");
  t.equal(
    hunkHeader(text, "drivers/infiniband/hw/erdma/erdma_main.c", 2),
    "@@ -647,8 +648,10 @@ static __init int erdma_init_module(void)",
  );
  t.equal(hunkHeader(text, "drivers/infiniband/hw/erdma/erdma_main.c", 3), undefined);
});

t.test(
  "applying to a hard-linked copy leaves the original alone; a failing patch changes nothing",
  async (t) => {
    const dir = t.testdir({ pristine: { "f.c": "one\ntwo\nthree\n", "g.c": "a\nb\nc\n" } });
    const copy = join(dir, "copy");
    await run("cp -al", "cp", ["-al", join(dir, "pristine"), copy]);
    const good = join(dir, "good.patch");
    writeFileSync(good, "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
    const patch = {
      index: 1,
      source: "good.patch",
      subject: "[PATCH] good",
      text: readFileSync(good, "utf8"),
    };
    await applyPatch(copy, patch, good, 1, "test tree");
    t.equal(readFileSync(join(copy, "f.c"), "utf8"), "one\nTWO\nthree\n");
    t.equal(readFileSync(join(dir, "pristine", "f.c"), "utf8"), "one\ntwo\nthree\n", "pristine untouched");
    t.equal(statSync(join(copy, "f.c")).nlink, 1);

    const bad = join(dir, "bad.patch");
    const badText =
      "Subject: [PATCH] bad\n\n--- a/g.c\n+++ b/g.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n one\n-zwei\n+ZWEI\n three\n";
    writeFileSync(bad, badText);
    await t.rejects(
      applyPatch(
        copy,
        { index: 2, source: "bad.patch", subject: "[PATCH] bad", text: badText },
        bad,
        2,
        "test tree",
      ),
      {
        message:
          'patch 2/2 "[PATCH] bad" (bad.patch) does not apply to test tree: f.c: hunk #1 FAILED at line 1 (@@ -1,3 +1,3 @@)',
      },
    );
    t.equal(
      readFileSync(join(copy, "g.c"), "utf8"),
      "a\nb\nc\n",
      "the hunk that would apply was not applied",
    );
  },
);
