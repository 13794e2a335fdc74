import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { matrixVerdicts } from "../support/matrix-verdicts.ts";

t.setTimeout(12 * 60 * 1000);

t.test("two shards merged equal the unsharded run", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const plan = "fixtures/plans/tiny.yaml";
  const list = await hil(["matrix", plan, "--shard", "2/2", "--list"], iso.env);
  t.equal(list.exitCode, 0);
  const [header, ...listed] = list.stdout.trim().split("\n");
  t.match(header, /^job\tkernel\tseries\tconfigs\tdriver\tdevice_profile\texecutor\tscenarios\trules$/);
  t.equal(listed.length, 1, "shard 2/2 of 2 jobs on one kernel: one job");
  const whole = await hil(["matrix", plan, "--out", join(root, "whole")], iso.env);
  t.equal(whole.exitCode, 0, `${whole.stdout}${whole.stderr}`.slice(-3000));
  t.match(whole.stdout, /^hil matrix: tiny: 2 job\(s\), 2 passed, 0 not passed; verdicts: /m);
  t.match(whole.stderr, /\[matrix\] job 2\/2: /, "progress per job");
  for (const i of [1, 2]) {
    const r = await hil(["matrix", plan, "--shard", `${i}/2`, "--out", join(root, `shard${i}`)], iso.env);
    t.equal(r.exitCode, 0, `shard ${i}/2\n${r.stdout}${r.stderr}`.slice(-3000));
    t.match(r.stdout, new RegExp(`^hil matrix: tiny shard ${i}/2: 1 job\\(s\\)`, "m"));
  }
  const merged = await hil(
    ["merge", join(root, "shard2"), join(root, "shard1"), "--out", join(root, "merged")],
    iso.env,
  );
  t.equal(merged.exitCode, 0, `${merged.stdout}${merged.stderr}`);
  t.match(merged.stdout, /^hil merge: tiny \(merged\): 2 job\(s\), 2 passed/m);
  const a = matrixVerdicts(join(root, "whole"));
  const b = matrixVerdicts(join(root, "merged"));
  t.same(Object.keys(b), Object.keys(a), "the same jobs, in the plan's order");
  t.same(b, a, "the same verdicts, rule for rule");
  const ktap = await hil(["report", join(root, "merged"), "--format", "ktap"], iso.env);
  t.equal(ktap.exitCode, 0, ktap.stderr);
  t.match(
    ktap.stdout,
    /^KTAP version 1\n# erdma-hil matrix: plan tiny, merged from 2 matrix dir\(s\): 2 job\(s\)\n1\.\.2\n/,
  );
  for (const id of Object.keys(a))
    t.match(ktap.stdout, new RegExp(`^    # Subtest: ${id.replace(/[.+]/g, "\\$&")}$`, "m"));
  t.ok(
    Object.values(a).every((m) => Object.keys(m).length > 10),
    "real verdicts: checks, scenario, rules",
  );
  const overlap = await hil(
    ["merge", join(root, "shard1"), join(root, "whole"), "--out", join(root, "bad")],
    iso.env,
  );
  t.equal(overlap.exitCode, 2);
  t.match(overlap.stderr, /^hil: error: inconsistent shards: /m);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
