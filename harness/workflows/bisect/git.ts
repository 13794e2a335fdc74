/**
 * A git range as the series hil bisect walks: the commits good..bad, oldest first, each one patch
 * (`git format-patch`), so step k is the good commit's tree plus the first k commits. The range
 * must be linear: a merge has no single patch, and git's own bisect would be needed to walk it.
 */
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { execa } from "execa";
import { HilError } from "../../../util/errors.ts";

export interface RangeCommit {
  sha: string;
  subject: string;
}

export interface GitRange {
  repo: string;
  good: { ref: string; sha: string };
  bad: { ref: string; sha: string };
  /** good..bad, oldest first */
  commits: RangeCommit[];
}

async function git(repo: string, args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const r = await execa("git", ["-C", repo, ...args], { reject: false, stripFinalNewline: true });
  return { ok: r.exitCode === 0, out: String(r.stdout), err: String(r.stderr) };
}

async function commitOf(repo: string, ref: string, option: string): Promise<string> {
  const r = await git(repo, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
  if (!r.ok) throw new HilError(`${option} ${ref}: no such commit in ${repo}`);
  return r.out.trim();
}

/** The range's commits, checked: a git repository, both refs commits, good an ancestor of bad, no merge. */
export async function gitRange(repoPath: string, goodRef: string, badRef: string): Promise<GitRange> {
  const repo = resolve(repoPath);
  if (!(await git(repo, ["rev-parse", "--git-dir"])).ok)
    throw new HilError(`--git ${repoPath}: not a git repository`, { where: repo });
  const good = await commitOf(repo, goodRef, "--good");
  const bad = await commitOf(repo, badRef, "--bad");
  if (!(await git(repo, ["merge-base", "--is-ancestor", good, bad])).ok)
    throw new HilError(`--good ${goodRef} is not an ancestor of --bad ${badRef}`, { where: repo });
  const merges = (await git(repo, ["rev-list", "--merges", `${good}..${bad}`])).out
    .split("\n")
    .filter(Boolean);
  if (merges.length > 0)
    throw new HilError(
      `${goodRef}..${badRef} holds ${merges.length} merge commit(s): hil bisect walks a linear range`,
      {
        where: repo,
        detail: `first merge: ${merges.at(-1)}; bisect each side's linear part, or rebase the range`,
      },
    );
  const listed = await git(repo, ["log", "--reverse", "--format=%H %s", `${good}..${bad}`]);
  const commits = listed.out
    .split("\n")
    .filter(Boolean)
    .map((line) => ({ sha: line.slice(0, 40), subject: line.slice(41) }));
  if (commits.length === 0) throw new HilError(`${goodRef}..${badRef} holds no commit`, { where: repo });
  return { repo, good: { ref: goodRef, sha: good }, bad: { ref: badRef, sha: bad }, commits };
}

/** Writes the range as an mbox (`git format-patch --stdout`), a patch per commit in order. */
export async function writeRangeSeries(range: GitRange, file: string): Promise<void> {
  const r = await git(range.repo, [
    "format-patch",
    "--stdout",
    "--no-signature",
    "--full-index",
    `${range.good.sha}..${range.bad.sha}`,
  ]);
  if (!r.ok)
    throw new HilError(`git format-patch ${range.good.ref}..${range.bad.ref} failed`, { detail: r.err });
  await writeFile(file, `${r.out}\n`);
}
