// hil matrix and hil merge end to end on fixtures/plans/tiny.yaml (Linux 6.12, two device
// profiles, one scenario): the whole plan, then shards 1/2 and 2/2 (as two CI machines run them),
// merged: the merged verdicts equal the unsharded run's, job for job and rule for rule, and hil
// report reads the merged directory. Merging a shard with itself is refused (exit 2).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import type { JobRecord } from "../../harness/workflows/job.ts";
import { verdictMap } from "../../harness/workflows/verdict-list.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(12 * 60 * 1000);

function verdictsOf(dir: string): Record<string, Record<string, string>> {
  const index = JSON.parse(readFileSync(join(dir, "matrix.json"), "utf8"));
  const out: Record<string, Record<string, string>> = {};
  for (const j of index.jobs as { id: string; runDir: string }[]) {
    const record = JSON.parse(readFileSync(join(dir, j.runDir, "verdicts.json"), "utf8")) as JobRecord;
    out[j.id] = Object.fromEntries(verdictMap(record));
  }
  return out;
}

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
  const a = verdictsOf(join(root, "whole"));
  const b = verdictsOf(join(root, "merged"));
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
