import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { baseIdentity, baseKey, ensureBaseTree, kernelVersion } from "../../harness/kernel/base-source.ts";
import { parseBaseSpec } from "../../harness/kernel/base-spec.ts";
import { run } from "../../util/exec.ts";

const tinyKernel = () => ({
  Makefile: "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 95\nEXTRAVERSION =\n",
  Kconfig: 'mainmenu "tiny"\n',
  scripts: { kconfig: { "merge_config.sh": "#!/bin/sh\n" } },
  init: { "main.c": "int main;\n" },
});

t.test("local bases: plain directory, git work tree, tarball", async (t) => {
  const dir = t.testdir({ cache: {}, plain: tinyKernel(), repo: tinyKernel() });
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = join(dir, "cache");
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });

  const plain = parseBaseSpec(join(dir, "plain"));
  const plainTree = await ensureBaseTree(plain);
  t.equal(readFileSync(join(plainTree.srcDir, "init", "main.c"), "utf8"), "int main;\n");
  t.same(kernelVersion(plainTree.srcDir), { major: 6, minor: 12, sublevel: 95, text: "6.12.95" });
  t.equal((await ensureBaseTree(plain)).srcDir, plainTree.srcDir, "a second call finds the entry");

  const repo = join(dir, "repo");
  const git = (...args: string[]) =>
    run("git", "git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
  await git("init", "-q");
  await git("add", ".");
  await git("commit", "-qm", "base");
  const spec = parseBaseSpec(repo);
  t.equal(spec.kind, "git");
  const clean = await baseKey(spec);
  writeFileSync(join(repo, "init", "main.c"), "int main = 1;\n");
  const dirty = await baseKey(spec);
  t.not(dirty, clean, "an uncommitted change changes the key");
  const gitTree = await ensureBaseTree(spec);
  t.equal(
    readFileSync(join(gitTree.srcDir, "init", "main.c"), "utf8"),
    "int main = 1;\n",
    "uncommitted change exported",
  );
  t.notOk(existsSync(join(gitTree.srcDir, ".git")));

  const tarball = join(dir, "linux-6.12.95.tar.gz");
  await run("tar", "tar", ["-czf", tarball, "-C", dir, "plain"]);
  const tarSpec = parseBaseSpec(tarball);
  const tarTree = await ensureBaseTree(tarSpec);
  t.equal(tarTree.key, await baseKey(tarSpec));
  t.ok(existsSync(join(tarTree.srcDir, "Makefile")), "the single top-level directory is dropped");

  const notKernel = join(dir, "junk.tar");
  await run("tar", "tar", ["-cf", notKernel, "-C", join(dir, "plain"), "init"]);
  await t.rejects(ensureBaseTree(parseBaseSpec(notKernel)), /does not contain a kernel source tree/);
  const leftovers = (await run("ls", "ls", ["-A", join(dir, "cache", "kernel-base")])).stdout.split("\n");
  t.notOk(
    leftovers.some((n) => n.includes(".tmp-")),
    "a failed unpack leaves no temp dir",
  );
});

t.test("<repo>@<ref>: the ref's commit exported, keyed by its tree, the work tree ignored", async (t) => {
  const dir = t.testdir({ cache: {}, repo: tinyKernel() });
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = join(dir, "cache");
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
  const repo = join(dir, "repo");
  const git = async (...args: string[]) =>
    (
      await run("git", "git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args])
    ).stdout.trim();
  await git("init", "-q", "-b", "main");
  await git("add", ".");
  await git("commit", "-qm", "base");
  await git("remote", "add", "origin", "https://git.example.org/linux.git");
  await git("config", "branch.main.remote", "origin");
  await git("checkout", "-qb", "for-next");
  writeFileSync(join(repo, "init", "main.c"), "int main = 2;\n");
  await git("commit", "-qam", "next");
  const next = await git("rev-parse", "HEAD");
  await git("checkout", "-q", "main");
  writeFileSync(join(repo, "init", "main.c"), "int uncommitted;\n");

  const spec = parseBaseSpec(`${repo}@for-next`);
  const id = await baseIdentity(spec);
  t.match(id.git, { repository: repo, ref: "for-next", commit: next, branch: "for-next" });
  t.notOk(id.git?.remoteUrl, "for-next follows no remote: no URL claimed");
  const main = await baseIdentity(parseBaseSpec(`${repo}@main`));
  t.match(main.git, { branch: "main", remoteUrl: "https://git.example.org/linux.git" });
  t.not(main.key, id.key, "two trees, two keys");
  const tree = await ensureBaseTree(spec);
  t.equal(tree.key, id.key);
  t.equal(
    readFileSync(join(tree.srcDir, "init", "main.c"), "utf8"),
    "int main = 2;\n",
    "the ref's tree, not the work tree",
  );
  t.notOk(existsSync(join(tree.srcDir, ".git")));

  await git("tag", "same-tree", next);
  const byHash = await baseIdentity(parseBaseSpec(`${repo}@${next.slice(0, 12)}`));
  t.equal(byHash.key, id.key, "a commit named by its hash: the same tree, the same key");
  t.notOk(byHash.git?.branch, "a hash names no branch");
  // commits made on for-next without checking it out: the work tree keeps its uncommitted change
  const commitOnNext = async (tree: string, message: string) =>
    git("update-ref", "refs/heads/for-next", await git("commit-tree", tree, "-p", "for-next", "-m", message));
  await commitOnNext(`${next}^{tree}`, "empty");
  const empty = await baseIdentity(spec);
  t.not(empty.git?.commit, next, "the branch moved on");
  t.equal(empty.key, id.key, "a new commit with the same tree keeps the key");

  await t.rejects(baseIdentity(parseBaseSpec(`${repo}@no-such-branch`)), /no-such-branch names no commit in/);
  const moved = await git("commit-tree", `${next}^{tree}`, "-p", "main", "-m", "moved");
  await git("update-ref", "refs/heads/main", moved);
  await t.rejects(
    ensureBaseTree(parseBaseSpec(`${repo}@main`), main.key),
    new RegExp(`main moved while hil was running \\(now commit ${moved}\\)`),
    "a ref that moved after its key was made is an error, not another tree",
  );
  const entries = (await run("ls", "ls", ["-A", join(dir, "cache", "kernel-base")])).stdout.split("\n");
  t.notOk(
    entries.some((n) => n.includes(".tmp-")),
    "the refused export leaves no temp dir",
  );
});
