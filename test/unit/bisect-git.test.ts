// A git range as hil bisect's series (harness/workflows/bisect/git.ts), on small repositories made
// here: the commits good..bad oldest first, written as one patch each; and each way a range is bad
// input (not a repository, an unknown ref, good not an ancestor of bad, a merge inside, nothing in
// it) is one HilError naming it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import t, { type Test } from "tap";
import { loadSeries } from "../../harness/kernel/series.ts";
import { gitRange, writeRangeSeries } from "../../harness/workflows/bisect/git.ts";

async function repoWithCommits(
  t: Test,
): Promise<{ root: string; repo: string; git: (...a: string[]) => Promise<string> }> {
  const root = t.testdir({ repo: {} });
  const repo = join(root, "repo");
  const git = async (...args: string[]) =>
    String(
      (
        await execa(
          "git",
          ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false", ...args],
          {
            cwd: repo,
          },
        )
      ).stdout,
    ).trim();
  await git("init", "-q", "-b", "main");
  for (const [i, name] of ["base", "one", "two", "three"].entries()) {
    writeFileSync(join(repo, `${name}.c`), `int ${name} = ${i};\n`);
    await git("add", "-A");
    await git("commit", "-q", "-m", `add ${name}.c`);
  }
  return { root, repo, git };
}

t.test("good..bad oldest first, a patch each", async (t) => {
  const { root, repo, git } = await repoWithCommits(t);
  const range = await gitRange(repo, "HEAD~3", "main");
  t.same(
    range.commits.map((c) => c.subject),
    ["add one.c", "add two.c", "add three.c"],
  );
  t.equal(range.commits[2]?.sha, await git("rev-parse", "HEAD"));
  t.equal(range.good.sha, await git("rev-parse", "HEAD~3"));
  const file = join(root, "range.mbox");
  await writeRangeSeries(range, file);
  const series = loadSeries(file);
  t.same(
    series.patches.map((p) => p.subject),
    ["[PATCH 1/3] add one.c", "[PATCH 2/3] add two.c", "[PATCH 3/3] add three.c"],
  );
  t.match(series.patches[1]?.text, /^\+int two = 2;$/m, "each patch the commit's diff");
});

t.test("bad input: one error naming it", async (t) => {
  const { repo, git } = await repoWithCommits(t);
  // outside any repository (the test directory is inside this project's)
  const plain = mkdtempSync(join(tmpdir(), "hil-not-a-repo-"));
  t.teardown(() => rmSync(plain, { recursive: true, force: true }));
  await t.rejects(gitRange(plain, "a", "b"), {
    name: "HilError",
    message: /^--git .*: not a git repository$/,
  });
  await t.rejects(gitRange(repo, "v9.9", "HEAD"), { message: /^--good v9\.9: no such commit in / });
  await t.rejects(gitRange(repo, "HEAD~1", "nope"), { message: /^--bad nope: no such commit in / });
  await t.rejects(gitRange(repo, "HEAD", "HEAD~2"), {
    message: "--good HEAD is not an ancestor of --bad HEAD~2",
  });
  await t.rejects(gitRange(repo, "HEAD", "HEAD"), { message: "HEAD..HEAD holds no commit" });
  await git("checkout", "-q", "-b", "side", "HEAD~2");
  writeFileSync(join(repo, "side.c"), "int side;\n");
  await git("add", "-A");
  await git("commit", "-q", "-m", "add side.c");
  await git("checkout", "-q", "main");
  await git("merge", "-q", "--no-edit", "side");
  await t.rejects(gitRange(repo, "HEAD~4", "main"), {
    message: /^HEAD~4\.\.main holds 1 merge commit\(s\): hil bisect walks a linear range$/,
  });
});
