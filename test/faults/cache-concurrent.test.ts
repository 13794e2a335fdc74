// Two `hil run`s sharing one cache at once finish with the verdicts of one run alone. The cache
// is a temp HIL_CACHE_DIR holding copies (never links; the warm cache is only read) of what takes
// long to make: the package lists and packages, QEMU, the default kernel and its source tree. Both
// runs then want the guest image's layers and the kernel module at the same moment: each part is
// built by one of them while the other waits on its lock; each copied entry is adopted once.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { BASE_CACHE_KIND } from "../../harness/kernel/base-source.ts";
import { KERNEL_CACHE_KIND } from "../../harness/kernel/build.ts";
import { qemuBuildKey } from "../../qemu/provision/build.ts";
import { cacheRoot } from "../../util/cache.ts";
import { type CliResult, hil, isolate, leftovers } from "../support/cli.ts";
import { loadVerdicts } from "../support/verdicts.ts";
import { copyWarm, warmDefaultKernel } from "../support/warm-cache.ts";
import { faultTable } from "./table.ts";

t.setTimeout(75 * 60 * 1000);

const table = faultTable(import.meta.url);
const WARM = cacheRoot();
const SCENARIO = "drain-twice";

/** What a run decided: the device probes' verdicts, each scenario's verdicts rule by rule. */
function decided(dir: string) {
  const record = loadVerdicts(dir);
  return {
    probe: (record.probe ?? []).map((c) => `${c.id} ${c.verdict}`),
    scenarios: record.scenarios.map((s) => ({
      name: s.name,
      judgements: s.judgements.map((j) => ({
        profile: j.profile,
        verdict: j.verdict,
        rules: j.rules.map((r) => `${r.rule} ${r.verdict}`),
      })),
    })),
  };
}

/** The parts a run built itself (the start lines of its build steps). */
function builtBy(r: CliResult): string[] {
  return r.stderr
    .split("\n")
    .filter((l) => /^\[(image|kmod)\] (building|packing) .* \.\.\.$/.test(l))
    .map((l) => l.replace(/ \.\.\.$/, ""));
}

function adoptedBy(r: CliResult): string[] {
  return r.stderr
    .split("\n")
    .filter((l) => l.includes("made before cache entries were recorded"))
    .map((l) => l.replace(/^\[cache\] cache entry (\S+) .*$/, "$1"));
}

t.test(`two hil runs of ${SCENARIO} on one cache at once: the verdicts of one alone`, async (t) => {
  const cache = mkdtempSync(join(tmpdir(), "hil-cache-shared-"));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  const kernel = await warmDefaultKernel(WARM);
  const started = Date.now();
  for (const place of [
    "apt",
    join("qemu", qemuBuildKey()),
    join(KERNEL_CACHE_KIND, kernel.key),
    join(BASE_CACHE_KIND, kernel.baseKey),
  ])
    await copyWarm(WARM, cache, place);
  // a lock of the apt lists copied while a process of the machine held it is not this cache's
  for (const ctx of readdirSync(join(cache, "apt"))) rmSync(join(cache, "apt", ctx, "lock"), { force: true });
  t.comment(`copied the warm parts in ${Math.round((Date.now() - started) / 1000)} s`);

  const args = (dir: string) => ["run", "--kernel", "debian:6.12", "--scenario", SCENARIO, "--run-dir", dir];
  const runs = t.testdir({ a: {}, b: {}, alone: {} });
  const runDirs = { a: join(runs, "a"), b: join(runs, "b"), alone: join(runs, "alone") };
  const isolations = [isolate(), isolate(), isolate()] as const;
  const env = (i: 0 | 1 | 2) => ({ ...isolations[i].env, HIL_CACHE_DIR: cache });

  const row = table.row(t, "two hil runs sharing one cache at once (its guest parts to build)");
  const bothAt = Date.now();
  const [a, b] = await Promise.all([hil(args(runDirs.a), env(0)), hil(args(runDirs.b), env(1))]);
  row.ms = Date.now() - bothAt;
  row.exit = `${a.exitCode}, ${b.exitCode}`;
  const alone = await hil(args(runDirs.alone), env(2));
  const said = (r: CliResult, dir: string) => {
    if (r.exitCode === 0) return "";
    const record = join(dir, "verdicts.json");
    return `${r.stdout}${r.stderr}${existsSync(record) ? readFileSync(record, "utf8").slice(0, 6000) : ""}`;
  };
  for (const [name, r, dir] of [
    ["first", a, runDirs.a],
    ["second", b, runDirs.b],
    ["alone", alone, runDirs.alone],
  ] as const)
    t.equal(r.exitCode, 0, `the ${name} run passes\n${said(r, dir)}`);

  const reference = decided(runDirs.alone);
  t.ok(reference.scenarios.length === 1 && reference.probe.length > 0, "the run alone judged the scenario");
  const verdictsOfRun = (dir: string) =>
    decided(dir)
      .scenarios.flatMap((x) => x.judgements.map((j) => `${j.profile} ${j.verdict}`))
      .join(" ");
  row.verdict = `${verdictsOfRun(runDirs.a)} | ${verdictsOfRun(runDirs.b)} (alone: ${verdictsOfRun(runDirs.alone)})`;
  t.same(decided(runDirs.a), reference, "the first concurrent run decided as the run alone");
  t.same(decided(runDirs.b), reference, "and so did the second");

  const [builtA, builtB] = [builtBy(a), builtBy(b)];
  t.ok(
    builtA.length + builtB.length > 0,
    `the concurrent runs built the guest's parts: ${[...builtA, ...builtB]}`,
  );
  t.same(
    builtA.filter((x) => builtB.includes(x)),
    [],
    "no part was built by both",
  );
  t.same(builtBy(alone), [], "the run alone built nothing: it found everything in the cache");
  const adopted = [...adoptedBy(a), ...adoptedBy(b)].sort();
  t.same(
    adopted,
    [...new Set(adopted)],
    `each copied entry was adopted once, by one of the two runs: ${adopted.join(", ")}`,
  );
  // a warm entry made before entries were recorded is adopted on first use; one made since (a
  // cold machine's first build) is recorded already and used silently (as in cache-verify)
  const kernelRecorded = readFileSync(join(kernel.dir, ".complete"), "utf8").trimStart().startsWith("{");
  t.equal(
    adopted.some((x) => x.startsWith("kernel/")),
    !kernelRecorded,
    kernelRecorded ? "the kernel, recorded already, is not adopted" : "the kernel among them",
  );
  t.same(adoptedBy(alone), [], "and used silently afterwards");

  const { run } = await import("../../util/exec.ts");
  const stray = await run("find", "find", [
    cache,
    "-regextype",
    "posix-extended",
    "-regex",
    ".*\\.(lock|tmp-[0-9]+|discard-[0-9]+|lock\\.(new|stale)-[0-9]+)$",
  ]);
  t.equal(stray.stdout.trim(), "", "no lock, temp or set-aside entry left in the cache");
  row.leftovers = stray.stdout.trim() ? stray.stdout.trim().split("\n") : [];
  for (const iso of isolations) {
    const left = leftovers(iso);
    row.leftovers = [...(row.leftovers ?? []), ...left.processes, ...left.entries];
    t.same(left, { processes: [], entries: [] }, "nothing left running");
  }
});
