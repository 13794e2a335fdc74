// A kernel from a git repository at a ref (`--kernel <repo>@<ref>`), on a real guest: a bare
// repository holding debian:6.12's tree as `main` and, as `for-next`, the same tree with its own
// EXTRAVERSION. `hil run --kernel <repo>@for-next` builds and boots for-next's tree (its release
// says so), continuing debian:6.12's cached build (main's tree is that base's source), records the
// commit and branch in verdicts.json, and KCIDB's checkout carries them; another commit with the
// same tree is the same cached kernel; a ref the repository lacks is one exit-2 line. The
// repository is made without copying the tree: git reads the cached source in place, and
// for-next's commit is written through a private index.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";
import { BASE_CACHE_KIND, gitTreeKey } from "../../harness/kernel/base-source.ts";
import { KbuildCounter } from "../../harness/kernel/kbuild-progress.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { cacheNamesOf } from "../support/kernel-keys.ts";
import { unpackedKernelSource } from "../support/kernel-source.ts";

// debian:6.12's build, if this machine has not made it yet (minutes on 2 cores)
t.setTimeout(100 * 60_000);

const EXTRAVERSION = "-hilgit";

t.test(
  "--kernel <repo>@<ref>: the ref's tree built and booted, its commit recorded and reported",
  async (t) => {
    const iso = isolate();
    const base = await hil(["kernel", "build", "--json", "--kernel", "debian:6.12"], iso.env, {
      timeoutMs: 85 * 60_000,
    });
    t.equal(base.exitCode, 0, base.stderr.slice(-3000));
    const baseKernel = JSON.parse(base.stdout);
    const root = t.testdir({});
    const repo = join(root, "linux.git");
    const src = await unpackedKernelSource("debian:6.12");
    const git = async (args: string[], env: Record<string, string> = {}) =>
      String(
        (
          await execa("git", ["-c", "user.name=hil-test", "-c", "user.email=hil-test@localhost", ...args], {
            env: { GIT_DIR: repo, GIT_WORK_TREE: src, ...env },
          })
        ).stdout,
      ).trim();
    await execa("git", ["init", "-q", "--bare", "-b", "main", repo]);
    const index = { GIT_INDEX_FILE: join(root, "index") };
    await git(["add", "-A", "--force", "."], index);
    const tree = await git(["write-tree"], index);
    const main = await git(["commit-tree", tree, "-m", "debian:6.12"]);
    await git(["update-ref", "refs/heads/main", main]);
    const makefile = readFileSync(join(src, "Makefile"), "utf8");
    t.match(makefile, /^EXTRAVERSION =\s*$/m, "debian's Makefile sets no EXTRAVERSION");
    const changed = join(root, "Makefile");
    writeFileSync(changed, makefile.replace(/^EXTRAVERSION =.*$/m, `EXTRAVERSION = ${EXTRAVERSION}`));
    const blob = await git(["hash-object", "-w", changed]);
    await git(["update-index", "--cacheinfo", `100644,${blob},Makefile`], index);
    const nextTree = await git(["write-tree"], index);
    const next = await git(["commit-tree", nextTree, "-p", main, "-m", "for-next: EXTRAVERSION"]);
    await git(["update-ref", "refs/heads/for-next", next]);

    // the tree of for-next is a cache entry of its own (keyed by its git tree id), kept when a
    // changed base.config makes the kernel itself a new build
    const treeKey = gitTreeKey(nextTree);
    const treeCached = cacheNamesOf(BASE_CACHE_KIND, treeKey).includes(treeKey);
    const runDir = join(iso.tmp, "run");
    const r = await hil(
      ["run", "--kernel", `${repo}@for-next`, "--scenario", "post-send-in-error", "--run-dir", runDir],
      iso.env,
      { timeoutMs: 85 * 60_000 },
    );
    t.equal(r.exitCode, 0, r.stderr.slice(-3000));
    t.ok(r.stderr.includes(`${repo}@for-next`), "the progress names the base as given");
    if (!r.stderr.includes(`[kernel] ${repo}@for-next: cached (`)) {
      t.match(
        r.stderr,
        `continuing the cached build of debian:6.12 (the tree of ${main.slice(0, 12)}, 1 commit(s) before for-next)`,
        "main's tree is debian:6.12's source: its build is continued, not a new one from scratch",
      );
      if (treeCached)
        t.notMatch(r.stderr, /linking .*@for-next/, "for-next's cached tree is not linked again");
      else t.match(r.stderr, /linking .*@for-next .* from debian:6\.12's tree: 1 file\(s\) differ/);
    }
    const record = JSON.parse(readFileSync(join(runDir, "verdicts.json"), "utf8"));
    t.match(record.release, new RegExp(`${EXTRAVERSION}$`), "the guest ran for-next's tree, not main's");
    t.match(record.versions.kernel, {
      spec: `${repo}@for-next`,
      git: { repository: repo, ref: "for-next", commit: next, tree: nextTree, branch: "for-next" },
    });

    const report = await hil(["report", "--format", "kcidb", runDir], iso.env);
    t.equal(report.exitCode, 0, report.stderr);
    const kcidb = JSON.parse(report.stdout);
    t.match(kcidb.checkouts[0], {
      tree_name: `${repo}@for-next`,
      git_commit_hash: next,
      git_repository_branch: "for-next",
      misc: { git_ref: "for-next" },
    });

    // the same tree under another commit: the same kernel, from the cache
    const again = await git(["commit-tree", nextTree, "-p", next, "-m", "same tree"]);
    const build = await hil(["kernel", "build", "--json", "--kernel", `${repo}@${again}`], iso.env);
    t.equal(build.exitCode, 0, build.stderr);
    t.match(build.stderr, /: cached \(/, "keyed by the tree, not the commit");
    t.notMatch(build.stderr, /\[kernel\] (exporting|linking|compiling)/);
    const kernel = JSON.parse(build.stdout);
    t.match(kernel.rebuild, {
      mode: "incremental",
      reason: /build rules change: Makefile/,
      baseKey: baseKernel.key,
    });
    const baseSteps = new KbuildCounter();
    for (const line of readFileSync(join(baseKernel.dir, "build.log"), "utf8").split("\n"))
      baseSteps.feed(line);
    t.ok(
      kernel.rebuild.steps * 5 < baseSteps.steps,
      `${kernel.rebuild.steps} Kbuild steps, debian:6.12's build ran ${baseSteps.steps}: a new release reaches the modules and the link, not every object`,
    );

    const missing = await hil(
      ["run", "--kernel", `${repo}@no-such-branch`, "--scenario", "post-send-in-error"],
      iso.env,
    );
    t.equal(missing.exitCode, 2);
    t.match(missing.stderr, /^hil: error: .*@no-such-branch: no-such-branch names no commit in /m);
    t.same(leftovers(iso).processes, [], "nothing left running");
  },
);
