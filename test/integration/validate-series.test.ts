// hil validate end to end on Linux 6.12 and the erdma-reflush device: the immediate-error series
// (fixtures/series/erdma-fail-post-in-error.mbox) on a small scenario selection reports the new
// FAILs (the drain WARNs under linux, a post in ERROR fails under ib and linux, not under
// iwarp-rdmac) and exits 1; an empty series reports no change and exits 0. Nothing is left running.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, hilWithRunDir, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

const IMMEDIATE_ERROR = "fixtures/series/erdma-fail-post-in-error.mbox";
const SCENARIOS = "drain-qp-idle,post-send-in-error";

t.test("the immediate-error series: new FAILs, exit 1", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["validate", "--kernel", "debian:6.12", "--series", IMMEDIATE_ERROR, "--scenario", SCENARIOS],
    t,
  );
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^drain-qp-idle\s+(?:[\w-]+,)*linux(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: the drain's sq marker post to qp in ERR returned -22, not 0/m,
  );
  t.match(
    r.stdout,
    /^\s+rule 9: PASS -> FAIL\s+the sq drain marker of qp was refused \(post returned -22\)/m,
  );
  t.match(r.stdout, /^\s+rule console: PASS -> FAIL\s+warn: WARNING: .*__ib_drain_sq/m);
  t.match(
    r.stdout,
    /^post-send-in-error\s+(?:[\w-]+,)*ib(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: post call \d+ to qp in ERR returned -22, not 0/m,
  );
  t.match(r.stdout, /^post-send-in-error\s+(?:[\w-]+,)*linux(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL/m);
  t.match(
    r.stdout,
    /^post-send-in-error\s+iwarp-rdmac\s+PASS\s+MISS\s+NOT JUDGED\s+rule 5: rule 5 not exercised/m,
    "RDMAC 6.2.4 allows the refusal, which leaves rule 5 nothing to judge: not a PASS",
  );
  t.match(r.stdout, /^\s+rule 9: PASS -> FAIL/m, "the rules that moved");
  t.match(
    r.stdout,
    /^hil validate: REGRESSION: [3-9] new FAIL, 0 fixed, 1 not judged, \d+ unchanged \(debian:6\.12 vs debian:6\.12 \+ 1 patch/m,
  );
  t.match(
    r.stderr,
    /\[validate\] 1 patch\(es\): "\[PATCH\] RDMA\/erdma: fail posts immediately once the QP is in ERROR"/,
  );
  t.match(r.stderr, /\[validate\] 2\/2 base\+series: /);
  const v = JSON.parse(readFileSync(join(dir, "validate.json"), "utf8"));
  t.equal(v.regression, true);
  t.ok(v.counts["new-fail"] >= 3);
  // the patched run carries its series: the patch as applied, its sha256 (KCIDB's patchset_hash)
  const patched = JSON.parse(readFileSync(join(dir, "patched", "verdicts.json"), "utf8"));
  t.equal(patched.series?.patches?.length, 1, "the series is recorded");
  const patch = patched.series.patches[0];
  t.match(patch.name, /^0001-RDMA-erdma-fail-posts-immediately.*\.patch$/);
  t.equal(
    createHash("sha256")
      .update(readFileSync(join(dir, "patched", "series", patch.name)))
      .digest("hex"),
    patch.sha256,
    "the copy in the run directory is the recorded patch",
  );
  t.match(patched.startedAt, /^\d{4}-\d\d-\d\dT/);
  t.equal(JSON.parse(readFileSync(join(dir, "base", "verdicts.json"), "utf8")).series, undefined);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("an empty series: no change, exit 0", async (t) => {
  const iso = isolate();
  const root = t.testdir({ "empty.mbox": "" });
  const dir = join(root, "run");
  const r = await hil(
    [
      "validate",
      "--kernel",
      "debian:6.12",
      "--series",
      join(root, "empty.mbox"),
      "--scenario",
      "drain-qp-idle",
      "--run-dir",
      dir,
    ],
    iso.env,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(r.stderr, /empty\.mbox holds no patch: base\+series is the base kernel/);
  t.match(r.stdout, /^no verdict changed \(\d+ compared\)$/m);
  t.match(
    r.stdout,
    /^hil validate: no regression: 0 new FAIL, 0 fixed, 0 not judged, \d+ unchanged \(.*, empty series\)/m,
  );
  t.notMatch(r.stdout, /NEW FAIL|FIXED|NOT JUDGED|changed {2}/);
  t.same(leftovers(iso), { processes: [], entries: [] });
});

t.test("a series that does not exist: exit 2 before anything runs", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const r = await hil(
    ["validate", "--series", join(root, "none.mbox"), "--run-dir", join(root, "run")],
    iso.env,
  );
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /^hil: error: series \S+none\.mbox does not exist/m);
  t.same(leftovers(iso), { processes: [], entries: [] });
});
