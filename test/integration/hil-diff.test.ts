// hil diff on two real runs: the drain suite's drain-qp-idle and post-send-in-error on Linux 6.12
// with the emulated erdma (erdma-reflush), then on the same kernel with the series that fails posts
// in ERROR at once (fixtures/series/erdma-fail-post-in-error.mbox: the drain's marker post is
// refused, so the flush the drain waits for never starts). `hil diff A B` lists the new FAILs with
// the rule's reason and the events it quotes and exits 1; `hil diff A A` says no change and exits 0;
// the KTAP it writes has the new FAILs as its not-ok tests. Nothing is left running or on disk.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { parseTap } from "../support/tap-parse.ts";

t.setTimeout(15 * 60 * 1000);

const SCENARIOS = "drain-qp-idle,post-send-in-error";

t.test("last night vs tonight on two real runs", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const a = join(root, "A");
  const b = join(root, "B");
  const base = await hil(
    ["run", "--kernel", "debian:6.12", "--scenario", SCENARIOS, "--run-dir", a],
    iso.env,
  );
  t.equal(base.exitCode, 0, `${base.stdout}${base.stderr}`.slice(-4000));
  const broken = await hil(
    [
      "run",
      "--kernel",
      "debian:6.12",
      "--series",
      "fixtures/series/erdma-fail-post-in-error.mbox",
      "--scenario",
      SCENARIOS,
      "--run-dir",
      b,
    ],
    iso.env,
  );
  t.not(broken.exitCode, 0, "the series breaks the drain");

  const r = await hil(["diff", a, b, "--out-dir", join(root, "diff")], iso.env);
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^drain-qp-idle\s+(?:[\w-]+,)*linux(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: the drain's sq marker post to qp in ERR returned -22, not 0$/m,
  );
  t.match(
    r.stdout,
    /^\s+rule 9: PASS -> FAIL {2}the sq drain marker of qp was refused \(post returned -22\)/m,
  );
  t.match(r.stdout, /^\s+#\d+ \{.*"ev":"drain_marker".*"rc":-22/m, "the event rule 1 quotes");
  t.match(r.stdout, /^\s+rule console: PASS -> FAIL {2}warn: WARNING: .*__ib_drain_sq/m);
  t.match(
    r.stdout,
    /^post-send-in-error\s+(?:[\w-]+,)*ib(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL\s+rule 1: post call \d+ to qp in ERR returned -22, not 0$/m,
  );
  t.match(r.stdout, /^post-send-in-error\s+(?:[\w-]+,)*linux(?:,[\w-]+)*\s+PASS\s+FAIL\s+NEW FAIL/m);
  t.match(r.stdout, /^\s+#\d+ \{.*"ev":"post_ret".*"rc":-22/m, "the post's return it quotes");
  t.match(
    r.stdout,
    /^post-send-in-error\s+iwarp-rdmac\s+PASS\s+MISS\s+NOT JUDGED/m,
    "RDMAC allows the refusal, which leaves rule 5 nothing to judge",
  );
  t.match(
    r.stdout,
    /^hil diff: REGRESSION: [3-9] new FAIL, 0 fixed, 1 not judged, 0 changed, 0 flaky, \d+ unchanged$/m,
  );
  const ktap = await parseTap(readFileSync(join(root, "diff", "diff.ktap"), "utf8"));
  const notOk = ktap.all.filter((x) => !x.ok).map((x) => x.name);
  t.ok(
    notOk.includes("drain-qp-idle [linux]") && notOk.includes("post-send-in-error [ib]"),
    notOk.join(", "),
  );
  t.equal(ktap.final.fail, notOk.length);

  const same = await hil(["diff", a, a], iso.env);
  t.equal(same.exitCode, 0, same.stdout);
  t.match(same.stdout, /^no change: the same \d+ verdicts on both sides$/m);
  t.match(same.stdout, /^hil diff: no change \(\d+ verdicts compared\)$/m);
  t.notMatch(same.stdout, /NEW FAIL|FIXED|NOT JUDGED/);

  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
