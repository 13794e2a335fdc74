// hil cache prune: runs mark the entries they use, prune removes those unused for long enough (and
// only those, under their locks), the apt lists stay, and the CLI says what it did or would do.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t, { type Test } from "tap";
import { parseUnusedFor } from "../../harness/cli/cache-command.ts";
import { ensureEntry, withEntry } from "../../util/cache.ts";
import { COMPLETE_MARK } from "../../util/cache-manifest.ts";
import { type DependenciesOf, removeEntries, unusedEntries } from "../../util/cache-prune.ts";
import { allEntries } from "../../util/cache-transfer.ts";
import { LAST_USE_DIR, lastUsed, lastUseMark, markUsed } from "../../util/cache-use.ts";
import { HIL_BIN } from "../support/cli.ts";
import { privateCacheDir } from "../support/private-cache.ts";
import { tempDir } from "../support/temp-dir.ts";

const DAY = 24 * 60 * 60 * 1000;

const withCacheDir = (t: Test) => privateCacheDir(t, "hil-prune-test-");

async function entry(kind: string, key: string, bytes = 10): Promise<string> {
  const { dir } = await ensureEntry(kind, key, { what: `${kind} thing` }, async (work) => {
    writeFileSync(join(work, "artifact"), "x".repeat(bytes));
  });
  return dir;
}

/** Sets when the entry was last used (its mark), or, with `mark: false`, only when it was built. */
function age(root: string, kind: string, key: string, daysAgo: number, mark = true): void {
  const when = (Date.now() - daysAgo * DAY) / 1000;
  if (mark) utimesSync(lastUseMark(root, kind, key), when, when);
  else {
    rmSync(lastUseMark(root, kind, key), { force: true });
    utimesSync(join(root, kind, key, COMPLETE_MARK), when, when);
  }
}

t.test("--unused-for takes days or hours, and says what it wanted", async (t) => {
  t.equal(parseUnusedFor("30d"), 30 * DAY);
  t.equal(parseUnusedFor("7"), 7 * DAY);
  t.equal(parseUnusedFor("12h"), DAY / 2);
  t.equal(parseUnusedFor("0.5d"), DAY / 2);
  for (const bad of ["", "d", "-1d", "3w", "30 days", "1e3"])
    t.throws(() => parseUnusedFor(bad), {
      message: `--unused-for: expected a duration such as 30d or 12h, got "${bad}"`,
    });
});

t.test("a run marks what it uses, at most once an hour", async (t) => {
  const root = withCacheDir(t);
  const dir = await entry("kernel", "k1");
  const mark = lastUseMark(root, "kernel", "k1");
  t.equal(mark, join(root, LAST_USE_DIR, "kernel", "k1"));
  t.ok(existsSync(mark), "a build marks its entry");
  age(root, "kernel", "k1", 0.02); // half an hour ago
  const halfHour = statSync(mark).mtimeMs;
  await entry("kernel", "k1");
  t.equal(statSync(mark).mtimeMs, halfHour, "a hit within the hour writes nothing");
  age(root, "kernel", "k1", 3);
  await entry("kernel", "k1");
  t.ok(Date.now() - statSync(mark).mtimeMs < 60_000, "a hit after it marks the entry again");
  age(root, "kernel", "k1", 3);
  await withEntry("kernel", "k1", "kernel thing", async () => undefined);
  t.ok(Date.now() - statSync(mark).mtimeMs < 60_000, "so does a use under the entry's lock");
  age(root, "kernel", "k1", 40, false);
  t.ok(Date.now() - (await lastUsed(root, "kernel", "k1", dir)) > 39 * DAY, "no mark: when it was built");

  const readOnly = join(tempDir(t, "hil-prune-ro-"), "a-file");
  writeFileSync(readOnly, "");
  await t.resolves(markUsed(readOnly, "kernel", "k1"), "a mark that cannot be written fails nothing");
});

t.test("prune removes what is unused for long enough, under its lock, and nothing else", async (t) => {
  const root = withCacheDir(t);
  await entry("kernel", "old", 1000);
  await entry("kernel", "fresh");
  await entry("image/modules", "unmarked", 500);
  await entry("qemu", "retaken");
  mkdirSync(join(root, "apt", "bookworm"), { recursive: true });
  writeFileSync(join(root, "apt", "bookworm", "stamp"), "");
  age(root, "kernel", "old", 40);
  age(root, "image/modules", "unmarked", 45, false);
  age(root, "qemu", "retaken", 31);
  t.notOk(
    (await allEntries(root)).some((e) => e.kind.startsWith(".")),
    "the marks are not entries (export, list)",
  );

  const listed = await unusedEntries(root, 30 * DAY);
  t.same(
    listed.map((e) => [e.kind, e.key]),
    [
      ["image/modules", "unmarked"],
      ["kernel", "old"],
      ["qemu", "retaken"],
    ],
    "the longest unused first; the fresh one and the apt lists not listed",
  );
  // the files' bytes: the artifact and the entry's record beside it
  for (const [e, artifact] of listed.map((e, i) => [e, [500, 1000, 10][i] ?? 0] as const))
    t.ok(e.bytes > artifact && e.bytes < artifact + 4096, `${e.key}: ${e.bytes} bytes`);
  t.same(await unusedEntries(root, 50 * DAY), [], "none unused for 50 days");

  await markUsed(root, "qemu", "retaken", Date.now());
  const removed = await removeEntries(root, listed, 30 * DAY);
  t.same(
    removed.map((e) => e.key),
    ["unmarked", "old"],
    "an entry a run took up after the listing is kept",
  );
  t.notOk(existsSync(join(root, "kernel", "old")), "removed");
  t.notOk(existsSync(join(root, "image", "modules", "unmarked")), "removed");
  t.notOk(existsSync(lastUseMark(root, "kernel", "old")), "its mark with it");
  t.same(readdirSync(join(root, "kernel")).sort(), ["fresh"], "no lock, no discard left beside them");
  t.ok(existsSync(join(root, "qemu", "retaken", "artifact")));
  t.ok(existsSync(join(root, "apt", "bookworm", "stamp")), "the package lists kept");
  t.same(await removeEntries(root, listed, 30 * DAY), [], "pruning again removes nothing");
});

t.test("an entry another needs counts as used when that one is (a kernel's source tree)", async (t) => {
  const root = withCacheDir(t);
  await entry("kernel", "k");
  await entry("kernel-base", "src");
  await entry("kernel-base", "orphan");
  for (const key of ["src", "orphan"]) age(root, "kernel-base", key, 60);
  age(root, "kernel", "k", 2);
  const needs: DependenciesOf = async (e) =>
    e.kind === "kernel" ? [{ kind: "kernel-base", key: "src", what: "its source" }] : [];
  const listed = await unusedEntries(root, 30 * DAY, Date.now(), needs);
  t.same(
    listed.map((e) => `${e.kind}/${e.key}`),
    ["kernel-base/orphan"],
    "the source of a kernel used 2 days ago stays",
  );
  t.same(
    (await unusedEntries(root, 30 * DAY)).map((e) => `${e.kind}/${e.key}`).sort(),
    ["kernel-base/orphan", "kernel-base/src"],
    "without the dependencies both would go",
  );
  const all = await unusedEntries(root, 30 * DAY);
  t.same(
    (await removeEntries(root, all, 30 * DAY, needs)).map((e) => e.key),
    ["orphan"],
    "the removal checks again, with the dependencies",
  );
  t.ok(existsSync(join(root, "kernel-base", "src", "artifact")));
});

t.test("hil cache prune: a dry run, then the prune, then a bad duration", async (t) => {
  const root = tempDir(t, "hil-prune-cli-");
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = root;
  await entry("kernel", "a".repeat(64), 2_000_000);
  await entry("kernel", "b".repeat(64));
  if (saved === undefined) delete process.env.HIL_CACHE_DIR;
  else process.env.HIL_CACHE_DIR = saved;
  age(root, "kernel", "a".repeat(64), 40);
  const hil = (args: string[]) =>
    execa(HIL_BIN, ["cache", "prune", ...args], {
      env: { ...process.env, HIL_CACHE_DIR: root },
      reject: false,
    });

  const dry = await hil(["--dry-run"]);
  t.equal(dry.exitCode, 0, dry.stderr);
  t.equal(
    dry.stdout,
    [
      "would remove\tkernel/aaaaaaaaaaaaaaaa\t2.0 MB\tkernel entry\tlast used 40 d ago",
      `hil cache prune: would remove 1 entries unused for 30d, 2.0 MB, from ${root}`,
    ].join("\n"),
  );
  t.ok(existsSync(join(root, "kernel", "a".repeat(64))), "a dry run removes nothing");

  const kept = await hil(["--unused-for", "41d"]);
  t.equal(kept.exitCode, 0, kept.stderr);
  t.equal(kept.stdout, `hil cache prune: removed 0 entries unused for 41d, 0.0 MB, from ${root}`);

  const real = await hil(["--unused-for", "30", "--json"]);
  t.equal(real.exitCode, 0, real.stderr);
  const out = JSON.parse(real.stdout) as {
    dryRun: boolean;
    removed: Array<{ kind: string; key: string; bytes: number }>;
  };
  t.match(out, { dryRun: false, removed: [{ kind: "kernel", key: "a".repeat(64) }] });
  t.equal(out.removed.length, 1);
  t.ok((out.removed[0]?.bytes ?? 0) > 2_000_000, "with its size");
  t.same(readdirSync(join(root, "kernel")), ["b".repeat(64)]);

  const bad = await hil(["--unused-for", "soon"]);
  t.equal(bad.exitCode, 2);
  t.equal(bad.stderr.trim(), 'hil: error: --unused-for: expected a duration such as 30d or 12h, got "soon"');
  t.same(readdirSync(join(root, "kernel")), ["b".repeat(64)], "a refused prune removes nothing");
});
