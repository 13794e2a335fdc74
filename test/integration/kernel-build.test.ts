import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import t from "tap";
import { register } from "../../harness/cli/kernel-command.ts";
import { PATCHED_CACHE_KIND, patchedTreeKey } from "../../harness/kernel/apply.ts";
import { BASE_CACHE_KIND, baseKey } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { buildKernel, ensureBaseSource, KERNEL_CACHE_KIND } from "../../harness/kernel/build.ts";
import { loadSeries } from "../../harness/kernel/series.ts";
import { cacheRoot } from "../../util/cache.ts";
import { run } from "../../util/exec.ts";
import { hashFile } from "../../util/hash.ts";
import { assertKernel } from "../support/kernel-artifact.ts";
import { cacheNamesOf, kernelKeyOf } from "../support/kernel-keys.ts";

// Real builds: minutes each on a cold cache (2 shared cores), seconds once cached.
t.setTimeout(4 * 3600_000);

const fixture = (name: string) => new URL(`../../fixtures/series/${name}`, import.meta.url).pathname;
const HELLO = "erdma-hil: hello from a patched kernel";

/** A PATH whose `make` fails loudly: proves a call did not run make. */
function withoutMake<T>(fn: () => Promise<T>): Promise<T> {
  const bin = mkdtempSync(join(tmpdir(), "hil-no-make-"));
  writeFileSync(join(bin, "make"), "#!/bin/sh\necho 'make must not run' >&2\nexit 99\n", { mode: 0o755 });
  const saved = process.env.PATH;
  process.env.PATH = `${bin}:${saved}`;
  return fn().finally(() => {
    process.env.PATH = saved;
    rmSync(bin, { recursive: true, force: true });
  });
}

t.test("plain debian:6.12", async (t) => {
  const a = await buildKernel({ base: "debian:6.12", configs: [] });
  assertKernel(t, a, /^6\.12\.\d+/);
  t.equal(a.srcDir, await ensureBaseSource("debian:6.12"), "built from the pristine tree");
  t.equal(a.key, await kernelKeyOf("debian:6.12"), "the key the leftover checks below look for");
});

t.test("a second build of the same inputs returns the cached artifact without running make", async (t) => {
  const first = await buildKernel({ base: "debian:6.12", configs: [] });
  const started = Date.now();
  const again = await withoutMake(() => buildKernel({ base: "debian:6.12", configs: [] }));
  const ms = Date.now() - started;
  t.same(again, first);
  t.ok(ms < 15_000, `returned in ${ms} ms`);
});

t.test("the CLI prints the artifact directory, or the artifact as JSON", async (t) => {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => {
    out.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    for (const extra of [[], ["--json"]]) {
      const program = new Command("hil").exitOverride();
      register(program);
      await program.parseAsync(["node", "hil", "kernel", "build", "--kernel", "debian:6.12", ...extra]);
    }
  } finally {
    process.stdout.write = write;
  }
  const cached = await buildKernel({ base: "debian:6.12", configs: [] });
  t.equal(out[0], `${cached.dir}\n`);
  t.same(JSON.parse(out[1] ?? "{}"), cached);
});

t.test("an out-of-tree module builds against the cached build tree", async (t) => {
  const a = await buildKernel({ base: "debian:6.12", configs: [] });
  const dir = t.testdir({
    "hello.c":
      '#include <linux/module.h>\nstatic int __init hello_init(void) { return 0; }\nmodule_init(hello_init);\nMODULE_LICENSE("GPL");\n',
    Kbuild: "obj-m := hello.o\n",
  });
  await run("make M=", "make", ["-C", a.srcDir, `O=${a.buildDir}`, `M=${dir}`, "modules"]);
  t.ok(existsSync(join(dir, "hello.ko")), "hello.ko");
  const info = await run("modinfo", "modinfo", ["-F", "vermagic", join(dir, "hello.ko")]);
  t.match(info.stdout, new RegExp(`^${a.release.replace(/[.+]/g, "\\$&")} `));
});

t.test("debian:6.12 + hello-printk series: the patched line is in vmlinux", async (t) => {
  const pristine = await ensureBaseSource("debian:6.12");
  const a = await buildKernel({ base: "debian:6.12", series: fixture("hello-printk.mbox"), configs: [] });
  t.not(a.srcDir, pristine, "built from a patched copy");
  t.ok(
    readFileSync(join(a.srcDir, "init", "main.c"), "utf8").includes(HELLO),
    "the patched tree has the line",
  );
  t.notOk(
    readFileSync(join(pristine, "init", "main.c"), "utf8").includes(HELLO),
    "the pristine tree does not",
  );
  t.ok(readFileSync(join(a.buildDir, "vmlinux")).includes(Buffer.from(HELLO)), "vmlinux carries the string");
  t.same(a.patches, ["[PATCH] init: say hello from a patched kernel"]);
  assertKernel(t, a, /^6\.12\.\d+/);
});

/** The trees in the cache (any kind's entry, its src/) other than `tree` that hold `tree`'s file `rel` as a hard link. */
function cachedLinksOf(tree: string, rel: string): string[] {
  const { ino, dev } = statSync(join(tree, rel));
  const trees: string[] = [];
  for (const kind of readdirSync(cacheRoot(), { withFileTypes: true }).filter((d) => d.isDirectory()))
    for (const entry of readdirSync(join(cacheRoot(), kind.name), { withFileTypes: true })) {
      const src = join(cacheRoot(), kind.name, entry.name, "src");
      if (!entry.isDirectory() || src === tree) continue;
      const st = statSync(join(src, rel), { throwIfNoEntry: false });
      if (st?.ino === ino && st.dev === dev) trees.push(src);
    }
  return trees;
}

t.test("a patch that does not apply: one error naming patch, file and hunk; cache unchanged", async (t) => {
  const pristine = await ensureBaseSource("debian:6.12");
  const rels = ["init/main.c", "drivers/infiniband/hw/erdma/erdma_main.c"];
  const touched = rels.map((f) => join(pristine, f));
  const hashesBefore = await Promise.all(touched.map((f) => hashFile(f)));
  const linksBefore = touched.map((f) => statSync(f).nlink);
  const cachedBefore = rels.map((rel) => cachedLinksOf(pristine, rel));
  const series = loadSeries(fixture("does-not-apply.mbox"));
  const base = await baseKey(parseBaseSpec("debian:6.12"));
  const kernelKey = await kernelKeyOf("debian:6.12", { series: fixture("does-not-apply.mbox") });
  const mine = () => [
    ...cacheNamesOf(PATCHED_CACHE_KIND, patchedTreeKey(base, series.key)),
    ...cacheNamesOf(KERNEL_CACHE_KIND, kernelKey),
  ];
  const baseEntries = () => readdirSync(join(cacheRoot(), BASE_CACHE_KIND)).filter((n) => n.startsWith(base));
  const baseBefore = baseEntries();
  t.same(mine(), [], "no entry of this series before");
  await t.rejects(buildKernel({ base: "debian:6.12", series: fixture("does-not-apply.mbox"), configs: [] }), {
    name: "HilError",
    message:
      'patch 2/2 "[PATCH 2/2] RDMA/erdma: report a failed PCI driver registration" (does-not-apply.mbox #2) does not apply to debian:6.12: drivers/infiniband/hw/erdma/erdma_main.c: hunk #2 FAILED at line 648 (@@ -647,8 +648,10 @@ static __init int erdma_init_module(void))',
  });
  t.same(mine(), [], "no new, temporary or half-patched entry of this series in the cache");
  t.same(baseEntries(), baseBefore, "the base's entry is as it was");
  t.same(await Promise.all(touched.map((f) => hashFile(f))), hashesBefore, "the pristine tree is unchanged");
  // other test files may meanwhile make their own hard-linked trees of the same base: a new link
  // must be one of those, a tree of the cache at the file's own path
  const cachedAfter = rels.map((rel) => cachedLinksOf(pristine, rel));
  t.same(
    touched.map((f, i) => statSync(f).nlink - (linksBefore[i] ?? 0)),
    cachedAfter.map((after, i) => after.length - (cachedBefore[i]?.length ?? 0)),
    "no new hard links to the pristine files but the trees other builds made (no patched copy was kept)",
  );
});

t.test("a fragment asking for a missing or unreachable option fails before compiling", async (t) => {
  const dir = t.testdir({
    "bad.config":
      "# asks for what this kernel cannot give\nCONFIG_ERDMA_HIL_NO_SUCH_OPTION=y\nCONFIG_HW_RANDOM_VIRTIO=y\n",
  });
  const fragment = join(dir, "bad.config");
  const key = await kernelKeyOf("debian:6.12", { fragments: [fragment] });
  t.same(cacheNamesOf(KERNEL_CACHE_KIND, key), [], "no entry of this fragment before");
  const err = await buildKernel({ base: "debian:6.12", configs: [fragment] }).then(
    () => undefined,
    (e: unknown) => e as Error & { format(): string },
  );
  t.ok(err, "the build fails");
  const text = err?.format() ?? "";
  t.match(text, /CONFIG_ERDMA_HIL_NO_SUCH_OPTION, CONFIG_HW_RANDOM_VIRTIO/);
  t.match(
    text,
    `CONFIG_ERDMA_HIL_NO_SUCH_OPTION=y (${fragment}:2): the symbol does not exist in Linux 6.12.`,
  );
  t.match(text, `CONFIG_HW_RANDOM_VIRTIO=y (${fragment}:3): olddefconfig dropped it`);
  t.match(
    text,
    /requires HW_RANDOM \(enclosing if\) && VIRTIO; in the final \.config: HW_RANDOM is not set, VIRTIO=y/,
  );
  t.same(
    cacheNamesOf(KERNEL_CACHE_KIND, key),
    [],
    "no kernel entry, lock or work dir of this build left behind",
  );
});

t.test("an unknown base is one error listing the accepted forms", async (t) => {
  await t.rejects(buildKernel({ base: "debian:5.10", configs: [] }), {
    name: "HilError",
    message: "unknown Debian base debian:5.10",
    detail:
      /debian:6\.1\n {2}debian:6\.12\n {2}debian:7\.2\n {2}debian-image:6\.1 \(Debian's built kernel, booted as it is\)\n {2}debian-image:6\.12 \(Debian's built kernel, booted as it is\)\n {2}a kernel source directory/,
  });
});
