// A CI shard that imports what another machine exported builds nothing: what `hil run --kernel
// debian:6.12 --scenario drain-twice` needs is exported from the warm cache (only read: archived
// under each entry's lock, never changed), imported into a fresh empty HIL_CACHE_DIR, and that
// run, pointed at the fresh root, finds everything cached (its progress says so, no line says it
// builds, fetches or unpacks anything, and the root holds the same entries after it as before)
// and gives the verdicts the warm run gives. The temp roots (about 2 GB each) are removed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { allEntries } from "../../util/cache-transfer.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { loadVerdicts, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(40 * 60 * 1000);

const RUN = ["run", "--kernel", "debian:6.12", "--scenario", "drain-twice"];
/** What a run prints when it makes something instead of finding it in the cache. */
const WORK =
  /building|compiling|configuring|extracting|unpacking|downloading|updating package lists|packing|applying|rebuilding|installing/i;

async function entriesOf(root: string): Promise<string[]> {
  return (await allEntries(root)).map((e) => `${e.kind}/${e.key}`).sort();
}

t.test("a fresh cache that imported the export of a run's entries builds nothing for that run", async (t) => {
  const iso = isolate();
  const temp = mkdtempSync(join(tmpdir(), "hil-cache-export-it-"));
  t.teardown(() => rmSync(temp, { recursive: true, force: true }));
  const fresh = join(temp, "fresh");

  // the warm run: builds into the machine's cache whatever is not there yet
  const warm = await hil([...RUN, "--run-dir", join(temp, "warm-run")], iso.env);
  t.equal(warm.exitCode, 0, `${warm.stdout}${warm.stderr}`.slice(-3000));

  const exported = await hil(["cache", "export", join(temp, "export"), "--kernel", "debian:6.12"], iso.env);
  t.equal(exported.exitCode, 0, exported.stderr.slice(-3000));
  t.comment(exported.stdout.split("\n").at(-2) ?? "");
  for (const kind of [
    "qemu",
    "kernel",
    "kernel-base",
    "image/userspace",
    "image/initramfs",
    "kmod/hil_kverbs",
    "apt",
  ])
    t.match(exported.stdout, new RegExp(`^${kind}/\\S+\\t`, "m"), `the export holds a ${kind} entry`);

  const imported = await hil(["cache", "import", join(temp, "export")], { ...iso.env, HIL_CACHE_DIR: fresh });
  t.equal(imported.exitCode, 0, imported.stderr.slice(-3000));
  t.match(imported.stdout, /hil cache import: 10 placed .*, 0 already there/);
  t.comment(imported.stdout.split("\n").at(-2) ?? "");
  const before = await entriesOf(fresh);

  const shard = await hil([...RUN, "--run-dir", join(temp, "fresh-run")], {
    ...iso.env,
    HIL_CACHE_DIR: fresh,
  });
  t.equal(shard.exitCode, warm.exitCode, `${shard.stdout}${shard.stderr}`.slice(-3000));
  t.match(shard.stderr, /^\[kernel\] debian:6\.12: cached \([0-9a-f]{16}\)$/m, "the kernel is found cached");
  t.match(
    shard.stderr,
    /^\[kmod\] hil_kverbs\.ko for debian:6\.12: cached \([0-9a-f]{16}\)$/m,
    "hil_kverbs is found cached",
  );
  t.same(
    shard.stderr.split("\n").filter((l) => WORK.test(l)),
    [],
    "no progress line says anything is built, fetched or unpacked",
  );
  t.same(await entriesOf(fresh), before, "the fresh root holds the entries it imported, and no other");

  const verdicts = (dir: string) =>
    loadVerdicts(dir).scenarios.map((s) => ({ name: s.name, verdicts: verdictsOf(s) }));
  t.same(
    verdicts(join(temp, "fresh-run")),
    verdicts(join(temp, "warm-run")),
    "the same verdicts as the warm run",
  );
  t.ok(verdicts(join(temp, "fresh-run")).length > 0, "drain-twice was judged");

  const again = await hil(["cache", "import", join(temp, "export")], { ...iso.env, HIL_CACHE_DIR: fresh });
  t.match(
    again.stdout,
    /hil cache import: 0 placed \(0\.0 MB\), 10 already there/,
    "a second import skips every entry",
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or in TMPDIR");
});
