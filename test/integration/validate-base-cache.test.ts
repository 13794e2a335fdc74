// hil validate twice against the same base (Linux 6.12, erdma-reflush, the one-file immediate-error
// series of fixtures/series on two scenarios, as validate-series.test.ts): the first run
// (--no-base-cache) boots both kernels and keeps the base side's run; the second boots only the
// patched kernel, copies the kept base run into its run directory, says so, and reports the same
// comparison as the first. Nothing is left running. The scenarios are private copies that carry
// this run's own comment: their bytes are in the base key, so another file validating the same
// base and scenarios at the same time (tap runs two) cannot replace the entry between the runs.
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { BASE_CACHE_KIND } from "../../harness/workflows/validate/base-cache.ts";
import { cachePath } from "../../util/cache.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(30 * 60 * 1000);

const SCENARIOS = ["drain-qp-idle", "post-send-in-error"];

/** The validation's arguments, its scenarios copied into `dir` with a comment no other run has. */
function validateArgs(dir: string): string[] {
  const mark = `# validate-base-cache.test.ts, run ${randomUUID()}\n`;
  const paths = SCENARIOS.map((name) => {
    const path = join(dir, `${name}.yaml`);
    writeFileSync(path, `${readFileSync(join("fixtures", "scenarios", `${name}.yaml`), "utf8")}${mark}`);
    return path;
  });
  return [
    "validate",
    "--kernel",
    "debian:6.12",
    "--series",
    "fixtures/series/erdma-fail-post-in-error.mbox",
    "--scenario",
    paths.join(","),
  ];
}

/** Guest boots started (a step's first line: "[guest] booting (tcg) ..."). */
const boots = (stderr: string) => stderr.match(/^\[guest\] booting \([a-z]+\) \.\.\.$/gm)?.length ?? 0;
const json = (path: string) => JSON.parse(readFileSync(path, "utf8"));
/**
 * A comparison's results: each row's verdicts and change, and the rules that moved (their reasons
 * left out: a patched side's reason may quote a kernel WARNING with its PID).
 */
type Delta = { key: string; rule?: string; base?: string; patched?: string; change: string; rules: Delta[] };
const results = (v: { deltas: Delta[] }) =>
  v.deltas.map((d) => ({
    key: d.key,
    base: d.base,
    patched: d.patched,
    change: d.change,
    rules: d.rules.map((r) => `${r.rule ?? ""}: ${r.base ?? "-"} -> ${r.patched ?? "-"}`),
  }));
/**
 * The table's rows without their reasons (the column the header names "reason") and without the
 * evidence lines under a row (a trace record's times differ from run to run).
 */
const rows = (stdout: string) => {
  const lines = stdout.slice(0, stdout.indexOf("\nrun directory: ")).split("\n");
  const cut = lines[0]?.indexOf("reason") ?? -1;
  return lines
    .filter((l) => !/^\s/.test(l) || l.trimStart().startsWith("rule "))
    .map((l) =>
      l.trimStart().startsWith("rule ") ? (l.trim().split(/\s{2,}/)[0] ?? "") : l.slice(0, cut).trimEnd(),
    );
};

/** The base cache's entry whose key starts with `short`, and its lock. */
function removeEntries(short: string): void {
  const kind = cachePath(BASE_CACHE_KIND, "");
  for (const name of readdirSync(kind).filter((n) => n.startsWith(short)))
    rmSync(join(kind, name), { recursive: true, force: true });
}

t.test("the second validation reuses the base side and reports the same comparison", async (t) => {
  const iso = isolate();
  const root = t.testdir({ scenarios: {} });
  const args = validateArgs(join(root, "scenarios"));
  const first = await hil([...args, "--no-base-cache", "--run-dir", join(root, "first")], iso.env);
  t.equal(first.exitCode, 1, `${first.stdout}${first.stderr}`.slice(-4000));
  const kept = /^base: ran \(--no-base-cache\); cached, key ([0-9a-f]{16})/m.exec(first.stdout);
  t.ok(kept, `the first run keeps its base side: ${first.stdout.slice(-1500)}`);
  // the entry is this run's alone (its scenarios' comment): no later run can hit it
  if (kept?.[1]) t.teardown(() => removeEntries(kept[1] as string));
  const firstBase = json(join(root, "first", "base", "verdicts.json"));
  const firstPatched = json(join(root, "first", "patched", "verdicts.json"));
  t.equal(boots(first.stderr), firstBase.boots + firstPatched.boots, "both sides booted");
  t.ok(firstBase.boots >= 1 && firstPatched.boots >= 1);

  const second = await hil([...args, "--run-dir", join(root, "second")], iso.env);
  t.equal(second.exitCode, first.exitCode, `${second.stdout}${second.stderr}`.slice(-4000));
  const reused =
    /^base: (\d+) verdicts reused from (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC), key ([0-9a-f]{16})/m.exec(
      second.stdout,
    );
  t.ok(reused, `the second run says it reused the base: ${second.stdout.slice(-1500)}`);
  t.equal(reused?.[3], kept?.[1], "under the key the first run kept it");
  t.equal(Number(reused?.[1]), firstBase.results.length, "every verdict of the base side");
  t.equal(
    reused?.[2],
    `${new Date(firstBase.startedAt).toISOString().slice(0, 19).replace("T", " ")} UTC`,
    "from the first run's base side",
  );
  t.match(second.stderr, /^\[validate\] 1\/2 base: \d+ verdicts reused from /m);
  t.notMatch(second.stderr, /^\[validate\] 1\/2 base \(/m, "the base side did not run");

  const secondPatched = json(join(root, "second", "patched", "verdicts.json"));
  t.equal(boots(second.stderr), secondPatched.boots, "only the patched kernel booted");
  t.ok(secondPatched.boots >= 1);
  t.equal(secondPatched.kernel, firstPatched.kernel, "the patched kernel is the first run's");
  t.equal(
    readFileSync(join(root, "second", "base", "verdicts.json"), "utf8"),
    readFileSync(join(root, "first", "base", "verdicts.json"), "utf8"),
    "the base side is the first run's, copied",
  );

  const v1 = json(join(root, "first", "validate.json"));
  const v2 = json(join(root, "second", "validate.json"));
  t.same(results(v2), results(v1), "the same comparison: every row's verdicts, change and moved rules");
  t.same(v2.counts, v1.counts);
  t.same(rows(second.stdout), rows(first.stdout), "the same table");
  t.match(first.stdout, /^hil validate: REGRESSION: .* in \d+s$/m);
  t.comment(`first:  ${/^hil validate: .*$/m.exec(first.stdout)?.[0]}`);
  t.comment(`second: ${/^hil validate: .*$/m.exec(second.stdout)?.[0]}`);
  t.ok(v1.counts["new-fail"] >= 3, "the comparison found the series' new FAILs");
  t.match(v1.base.cache, { reused: false, stored: true, why: "--no-base-cache" });
  t.match(v2.base.cache, { reused: true, key: v1.base.cache.key });
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
