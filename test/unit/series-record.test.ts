/**
 * A run records the series its kernel was built with: the patches copied into <run>/series/ with
 * their sha256, and the KCIDB report's patchset_hash computed from them.
 */
import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { patchesFromMbox } from "../../harness/kernel/series.ts";
import { patchsetHash, renderKcidb } from "../../harness/report/kcidb.ts";
import { validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { patchFileSlug, recordSeries } from "../../harness/workflows/job/series-record.ts";
import { syntheticRecord } from "../fixtures/rundir/synthetic.ts";

const MBOX = fileURLToPath(new URL("../../fixtures/series/unit/cover-and-two-patches.mbox", import.meta.url));
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

t.test("file names as git format-patch gives them", async (t) => {
  t.equal(patchFileSlug("[PATCH v2 3/5] RDMA/erdma: Fix the drain"), "RDMA-erdma-Fix-the-drain");
  t.equal(patchFileSlug("[PATCH] [RFC] a..b  c!"), "a.b-c");
  t.equal(patchFileSlug("[PATCH 1/1] ///"), "patch", "nothing left: a generic name");
  t.ok(patchFileSlug(`[PATCH] ${"x".repeat(200)}`).length <= 52, "long subjects are cut");
});

t.test("the series is copied into the run directory, each patch with its sha256", async (t) => {
  const runDir = t.testdir({});
  const recorded = await recordSeries(MBOX, runDir);
  const expected = patchesFromMbox(await readFile(MBOX, "utf8"), "cover-and-two-patches.mbox");
  t.equal(recorded.patches.length, 2, "the cover letter is not a patch");
  t.equal(recorded.path, MBOX);
  t.same(await readdir(join(runDir, "series")), recorded.patches.map((p) => p.name).sort());
  for (const [i, p] of recorded.patches.entries()) {
    t.match(p.name, new RegExp(`^000${i + 1}-.+\\.patch$`));
    t.equal(p.subject, expected[i]?.subject);
    const bytes = await readFile(join(runDir, "series", p.name), "utf8");
    t.equal(bytes, expected[i]?.text, `${p.name} holds the patch as applied`);
    t.equal(p.sha256, sha(bytes), `${p.name}: its sha256`);
  }
});

t.test("a recorded series gives KCIDB its patchset hash and files", async (t) => {
  const runDir = t.testdir({});
  const series = await recordSeries(MBOX, runDir);
  const { series: _, ...record } = syntheticRecord();
  await writeFile(
    join(runDir, "verdicts.json"),
    JSON.stringify({ ...record, kernel: "debian:6.12 + 2 patch(es) from x.mbox", series }),
  );
  const doc = await renderKcidb(await loadRunDir(runDir));
  t.equal(doc.checkouts[0]?.patchset_hash, patchsetHash(series.patches.map((p) => p.sha256)));
  t.same(
    (doc.checkouts[0]?.patchset_files as Array<{ name: string }> | undefined)?.map((f) => f.name),
    series.patches.map((p) => p.name),
  );
  t.same((await validateKcidb(doc)).errors, [], "schema-valid");
});

t.test("a series that does not exist is one clear error", async (t) => {
  const runDir = t.testdir({});
  await t.rejects(recordSeries(join(runDir, "nope.mbox"), runDir), {
    message: /series .*nope\.mbox does not exist/,
  });
  t.same(await readdir(runDir), [], "nothing written");
});
