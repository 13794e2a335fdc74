// A git ref's tree made from a cached tree of an ancestor (git-linked-tree.ts), and the tree id of
// a plain directory (git-tree-id.ts), on a small real repository: the linked tree has the ref's
// content to the last mode bit, shares every unchanged file with the cached tree, and writes nothing
// into it.
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";
import { gitTreeChanges, linkGitTree } from "../../harness/kernel/git-linked-tree.ts";
import { gitTreeIdOf } from "../../harness/kernel/git-tree-id.ts";

async function git(repo: string, args: string[]): Promise<string> {
  const r = await execa("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@localhost", ...args]);
  return String(r.stdout).trim();
}

/** A repository with two commits: `first` and `second`, which changes, adds, deletes and re-points. */
async function repository(dir: string) {
  const repo = join(dir, "repo");
  mkdirSync(join(repo, "drivers"), { recursive: true });
  await git(repo, ["init", "-q", "-b", "main"]);
  writeFileSync(join(repo, "Makefile"), "VERSION = 6\nEXTRAVERSION =\n");
  writeFileSync(join(repo, "drivers", "a.c"), "int a;\n");
  writeFileSync(join(repo, "drivers", "gone.h"), "#define GONE\n");
  writeFileSync(join(repo, "drivers", "odd[1].c"), "int odd;\n");
  writeFileSync(join(repo, ".gitignore"), "*.o\n");
  writeFileSync(join(repo, "kept.o"), "an ignored name, committed anyway\n");
  writeFileSync(join(repo, "run.sh"), "#!/bin/sh\n");
  chmodSync(join(repo, "run.sh"), 0o755);
  symlinkSync("drivers/a.c", join(repo, "link"));
  await git(repo, ["add", "-A", "--force", "."]);
  await git(repo, ["commit", "-q", "-m", "first"]);
  const first = await git(repo, ["rev-parse", "HEAD^{tree}"]);
  writeFileSync(join(repo, "Makefile"), "VERSION = 6\nEXTRAVERSION = -next\n");
  writeFileSync(join(repo, "drivers", "odd[1].c"), "int odd = 1;\n");
  await git(repo, ["rm", "-q", "drivers/gone.h"]);
  writeFileSync(join(repo, "drivers", "new.c"), "int n;\n");
  await git(repo, ["rm", "-q", "link"]);
  symlinkSync("run.sh", join(repo, "link"));
  await git(repo, ["add", "-A", "--force", "."]);
  await git(repo, ["commit", "-q", "-m", "second"]);
  const second = await git(repo, ["rev-parse", "HEAD^{tree}"]);
  return { repo, first, second };
}

async function exported(repo: string, tree: string, dest: string): Promise<string> {
  mkdirSync(dest);
  await execa("bash", ["-o", "pipefail", "-c", `git -C "${repo}" archive ${tree} | tar -x -C "${dest}"`]);
  return dest;
}

t.test("a directory's tree id is the one git gives its content, ignored names included", async (t) => {
  const dir = t.testdir({});
  const { repo, first, second } = await repository(dir);
  t.equal(await gitTreeIdOf(await exported(repo, first, join(dir, "first"))), first);
  t.equal(await gitTreeIdOf(await exported(repo, second, join(dir, "second"))), second);
  t.not(first, second);
});

t.test("the changes between two trees, file by file", async (t) => {
  const { repo, first, second } = await repository(t.testdir({}));
  t.same(await gitTreeChanges(repo, first, second), [
    { path: "Makefile", kind: "modified" },
    { path: "drivers/gone.h", kind: "deleted" },
    { path: "drivers/new.c", kind: "added" },
    { path: "drivers/odd[1].c", kind: "modified" },
    { path: "link", kind: "modified" },
  ]);
});

t.test(
  "the ref's tree linked from a cached tree: its content, the rest shared, the cached tree untouched",
  async (t) => {
    const dir = t.testdir({});
    const { repo, first, second } = await repository(dir);
    const cached = await exported(repo, first, join(dir, "cached"));
    const dest = join(dir, "linked");
    const changes = await linkGitTree(repo, { srcDir: cached, tree: first, describe: "first" }, second, dest);
    t.equal(changes.length, 5);
    t.equal(await gitTreeIdOf(dest), second, "the linked tree is the ref's tree");
    t.equal(await gitTreeIdOf(cached), first, "the cached tree still is its own");
    t.equal(
      statSync(join(dest, "drivers", "a.c")).ino,
      statSync(join(cached, "drivers", "a.c")).ino,
      "unchanged: shared",
    );
    t.equal(statSync(join(dest, "run.sh")).ino, statSync(join(cached, "run.sh")).ino);
    for (const f of ["Makefile", "drivers/odd[1].c"]) {
      t.not(statSync(join(dest, f)).ino, statSync(join(cached, f)).ino, `${f}: a file of its own`);
      t.equal(statSync(join(dest, f)).nlink, 1);
    }
    t.match(readFileSync(join(dest, "Makefile"), "utf8"), /EXTRAVERSION = -next/);
    t.match(readFileSync(join(cached, "Makefile"), "utf8"), /EXTRAVERSION =\n/);
  },
);

t.test("a tree the repository does not have: the git error, nothing linked", async (t) => {
  const dir = t.testdir({});
  const { repo, first } = await repository(dir);
  const cached = await exported(repo, first, join(dir, "cached"));
  const missing = "0123456789abcdef0123456789abcdef01234567";
  await t.rejects(
    linkGitTree(repo, { srcDir: cached, tree: first, describe: "first" }, missing, join(dir, "linked")),
    /git diff-tree failed/,
  );
  t.throws(() => statSync(join(dir, "linked")), /ENOENT/);
});
