import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  isCoverLetter,
  isMboxSeparator,
  loadSeries,
  messageSubject,
  patchesFromMbox,
  patchFileNames,
  splitMboxMessages,
} from "../../harness/kernel/series.ts";
import { isHilError } from "../../util/errors.ts";

const fixtures = new URL("../../fixtures/series/", import.meta.url).pathname;
const multi = join(fixtures, "unit", "cover-and-two-patches.mbox");

t.test("mbox separators: format-patch and b4, never a body line", async (t) => {
  t.ok(isMboxSeparator("From 2e8619ddeea59ab3bafdb8b319faa66d407faa53 Mon Sep 17 00:00:00 2001"));
  t.ok(isMboxSeparator("From git@z Thu Jan  1 00:00:00 1970"));
  t.notOk(isMboxSeparator("From the point of view of an mbox reader, this line starts with"));
  t.notOk(isMboxSeparator(">From 2e8619ddeea59ab3bafdb8b319faa66d407faa53 Mon Sep 17 00:00:00 2001"));
  t.notOk(isMboxSeparator("From: erdma-hil <erdma-hil@example.invalid>"));
});

t.test(
  "a multi-patch mbox: cover letter skipped, >From kept in its message, subjects unfolded",
  async (t) => {
    const text = readFileSync(multi, "utf8");
    t.equal(splitMboxMessages(text).length, 3);
    const patches = patchesFromMbox(text, "cover-and-two-patches.mbox");
    t.equal(patches.length, 2);
    t.same(
      patches.map((p) => [p.index, p.subject]),
      [
        [1, "[PATCH 1/2] a: add a second line"],
        [
          2,
          "[PATCH 2/2] b: add a line with a very long subject that git folds over two header lines because it is long",
        ],
      ],
    );
    t.match(
      patches[0]?.text,
      /^From the point of view of an mbox reader/m,
      "the escaped body line is unescaped",
    );
    t.match(patches[0]?.text, /^\+two$/m);
    t.notMatch(patches[0]?.text, /^\+y$/m, "patch 2's diff is not part of patch 1");
    t.equal(patches[1]?.source, "cover-and-two-patches.mbox #3");
  },
);

t.test("a b4-style mbox splits on its 'From git@z' lines", async (t) => {
  const msg = (n: number) =>
    `From git@z Thu Jan  1 00:00:00 1970\nSubject: [PATCH v2 ${n}/2] part ${n}\n\nbody\n---\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n`;
  const patches = patchesFromMbox(msg(1) + msg(2), "b4.mbx");
  t.same(
    patches.map((p) => p.subject),
    ["[PATCH v2 1/2] part 1", "[PATCH v2 2/2] part 2"],
  );
});

t.test("cover letters and subjects", async (t) => {
  t.ok(isCoverLetter("[PATCH 0/3] series"));
  t.ok(isCoverLetter("[PATCH v2 00/12] series"));
  t.ok(isCoverLetter("[RFC PATCH net-next 0/2] series"));
  t.notOk(isCoverLetter("[PATCH 1/3] one"));
  t.notOk(isCoverLetter(undefined));
  t.equal(
    messageSubject("From: x\nSubject: =?UTF-8?q?RDMA/erdma:_fix_=C3=A9?=\n\nbody"),
    "RDMA/erdma: fix é",
  );
  t.equal(messageSubject("From: x\n\nSubject: not a header"), undefined);
});

t.test("a message without a diff that is not a cover letter is an error naming it", async (t) => {
  const text = "From git@z Thu Jan  1 00:00:00 1970\nSubject: [PATCH 1/1] talk only\n\nno diff here\n";
  t.throws(
    () => patchesFromMbox(text, "x.mbox"),
    /message 1 \("\[PATCH 1\/1\] talk only"\) contains no diff/,
  );
});

t.test("a plain diff file is a one-patch series", async (t) => {
  const patches = patchesFromMbox("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "fix.patch");
  t.equal(patches.length, 1);
  t.equal(patches[0]?.subject, "fix.patch");
});

t.test("patch directories apply in sorted name order, only *.patch", async (t) => {
  t.same(patchFileNames(["0010-c.patch", "README", "0002-b.patch", "0001-a.patch", "series", "x.diff"]), [
    "0001-a.patch",
    "0002-b.patch",
    "0010-c.patch",
  ]);
  const dir = t.testdir({
    "0002-second.patch": "Subject: [PATCH 2/2] second\n\n---\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-b\n+c\n",
    "0001-first.patch": "Subject: [PATCH 1/2] first\n\n---\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
    "notes.txt": "ignored",
  });
  const series = loadSeries(dir);
  t.same(
    series.patches.map((p) => [p.index, p.source, p.subject]),
    [
      [1, "0001-first.patch", "[PATCH 1/2] first"],
      [2, "0002-second.patch", "[PATCH 2/2] second"],
    ],
  );
});

t.test("series key follows the bytes", async (t) => {
  const dir = t.testdir({ "a.mbox": readFileSync(multi) });
  const first = loadSeries(join(dir, "a.mbox")).key;
  t.equal(loadSeries(join(dir, "a.mbox")).key, first, "same bytes, same key");
  writeFileSync(join(dir, "a.mbox"), `${readFileSync(multi, "utf8")}\n`);
  t.not(loadSeries(join(dir, "a.mbox")).key, first, "one more byte, another key");
  mkdirSync(join(dir, "d"));
  writeFileSync(join(dir, "d", "1.patch"), "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n");
  const dirKey = loadSeries(join(dir, "d")).key;
  writeFileSync(join(dir, "d", "2.patch"), "--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n");
  t.not(loadSeries(join(dir, "d")).key, dirKey, "adding a patch changes the key");
});

t.test("missing and empty series are errors", async (t) => {
  const dir = t.testdir({ empty: {} });
  t.throws(() => loadSeries(join(dir, "nope.mbox")), /series .*nope\.mbox does not exist/);
  try {
    loadSeries(join(dir, "empty"));
    t.fail("expected an error");
  } catch (err) {
    t.ok(isHilError(err));
    t.match(String((err as Error).message), /no \*\.patch files/);
  }
});
