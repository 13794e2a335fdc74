/**
 * What a KCIDB checkout says about the kernel base a run was built from (kernelBase of the run's
 * describe string: `debian:6.12`, `git <path>`, `dir <path>`, `tarball <path>`).
 * - A git work tree: git_repository_url, git_commit_hash, git_repository_branch and
 *   git_commit_name (`git describe --tags`), read from the tree when the report is written. The
 *   run does not record them, so the commit is HEAD as the tree's reflog had it when the run
 *   started (verdicts.json's startedAt): a tree that moved on since still gives the commit the run
 *   built. The branch is given only when HEAD has not moved since; the URL only when the branch's
 *   remote (else origin) is one KCIDB takes (https://, kcidb-io 32f6864), without credentials. What could
 *   not be said is in misc, with why.
 * - A git repository at a ref (<repo>@<ref>): the commit, its branch and its remote's URL as the
 *   run resolved and recorded them (verdicts.json's versions.kernel.git), git_commit_name read
 *   from the repository when the report is written.
 * - debian:X.Y: Debian's linux-source tarball is no git checkout and does not name the upstream
 *   commit it was cut from: no git fields; misc names the Debian source package, its suite and,
 *   where the run recorded it (verdicts.json's versions.kernel.debianVersion), its version.
 * - A plain directory or a tarball: its path (tree_name) and nothing more.
 */

import { probe } from "../../util/exec.ts";
import { DEBIAN_BASES } from "../kernel/base-spec.ts";
import { kernelBase, type RunDir } from "../rundir/read.ts";

export interface CheckoutFacts {
  /** KCIDB checkout fields (git_*) */
  fields: Record<string, string>;
  /** what goes into the checkout's misc */
  misc: Record<string, unknown>;
}

async function git(path: string, args: string[]): Promise<string | undefined> {
  const r = await probe("git", ["-C", path, ...args], { timeoutMs: 30_000 });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

/** HEAD's reflog, newest first: the commit HEAD pointed to from each time (seconds) on. */
async function headReflog(path: string): Promise<Array<{ sha: string; at: number }>> {
  const out = await git(path, ["reflog", "show", "--date=unix", "--format=%H %gd", "HEAD"]);
  return (out ?? "")
    .split("\n")
    .map((l) => /^([0-9a-f]{40}) \S*@\{(\d+)\}$/.exec(l))
    .flatMap((m) => (m ? [{ sha: m[1] as string, at: Number(m[2]) }] : []));
}

/** A remote URL as KCIDB takes it (https://, no user or password), or undefined. */
export function kcidbGitUrl(url: string): string | undefined {
  if (!/^https:\/\//.test(url)) return undefined;
  try {
    const u = new URL(url);
    u.username = "";
    u.password = "";
    return u.href;
  } catch {
    return undefined;
  }
}

async function gitCheckout(path: string, startedAt: string | undefined): Promise<CheckoutFacts> {
  const misc: Record<string, unknown> = { git_tree: path };
  if ((await git(path, ["rev-parse", "--is-inside-work-tree"])) !== "true")
    return { fields: {}, misc: { ...misc, git_note: "the tree is not a git work tree any more" } };
  const head = await git(path, ["rev-parse", "--verify", "HEAD"]);
  const started = startedAt === undefined ? Number.NaN : Date.parse(startedAt) / 1000;
  const reflog = await headReflog(path);
  let commit: string | undefined;
  let moved: boolean;
  if (Number.isNaN(started)) {
    commit = head;
    moved = false;
    misc.git_note = "the run has no start time: HEAD when the report was written";
  } else if (reflog.length === 0) {
    commit = head;
    moved = false;
    misc.git_note = "the tree keeps no reflog: HEAD when the report was written";
  } else {
    commit = reflog.find((e) => e.at <= started)?.sha;
    moved = (reflog[0]?.at ?? 0) > started;
    if (commit === undefined) misc.git_note = "HEAD at the run's start is older than the tree's reflog";
    else if (moved) misc.git_note = "HEAD moved after the run started: the commit is HEAD at the start";
  }
  const fields: Record<string, string> = {};
  if (commit) {
    fields.git_commit_hash = commit;
    const name = await git(path, ["describe", "--tags", commit]);
    if (name) fields.git_commit_name = name;
  }
  const branch = moved ? undefined : await git(path, ["symbolic-ref", "--short", "-q", "HEAD"]);
  if (branch) fields.git_repository_branch = branch;
  const remote = (branch && (await git(path, ["config", "--get", `branch.${branch}.remote`]))) || "origin";
  const url = await git(path, ["config", "--get", `remote.${remote}.url`]);
  const kcidbUrl = url === undefined ? undefined : kcidbGitUrl(url);
  if (kcidbUrl) fields.git_repository_url = kcidbUrl;
  else misc.git_remote = url === undefined ? `no remote ${remote}` : `${remote} is not an https:// URL`;
  if (await git(path, ["status", "--porcelain", "--untracked-files=no"]))
    misc.git_uncommitted_changes = "the tree has uncommitted changes now; a build from it includes them";
  return { fields, misc };
}

type RecordedGit = NonNullable<NonNullable<NonNullable<RunDir["record"]["versions"]>["kernel"]>["git"]>;

async function recordedCheckout(g: RecordedGit): Promise<CheckoutFacts> {
  const fields: Record<string, string> = { git_commit_hash: g.commit };
  const misc: Record<string, unknown> = { git_tree: g.repository, git_ref: g.ref };
  const name = await git(g.repository, ["describe", "--tags", g.commit]);
  if (name) fields.git_commit_name = name;
  if (g.branch) fields.git_repository_branch = g.branch;
  const url = g.remoteUrl === undefined ? undefined : kcidbGitUrl(g.remoteUrl);
  if (url) fields.git_repository_url = url;
  else
    misc.git_remote =
      g.remoteUrl === undefined ? "the branch has no remote" : "the remote is not an https:// URL";
  return { fields, misc };
}

/** The Debian package version of the kernel source, where the run recorded it (versions.kernel). */
function debianVersionOf(run: RunDir): string | undefined {
  const versions = (run.record as { versions?: { kernel?: { debianVersion?: unknown } } }).versions;
  const v = versions?.kernel?.debianVersion;
  return typeof v === "string" ? v : undefined;
}

export async function checkoutFacts(run: RunDir): Promise<CheckoutFacts> {
  const recorded = run.record.versions?.kernel?.git;
  if (recorded) return recordedCheckout(recorded);
  const base = kernelBase(run);
  const debian = Object.hasOwn(DEBIAN_BASES, base)
    ? DEBIAN_BASES[base as keyof typeof DEBIAN_BASES]
    : undefined;
  if (debian) {
    const version = debianVersionOf(run);
    return {
      fields: {},
      misc: {
        debian_source_package: debian.package,
        debian_suite: debian.suite,
        ...(version ? { debian_package_version: version } : {}),
      },
    };
  }
  const m = /^git (.+)$/.exec(base);
  if (m) return gitCheckout(m[1] as string, run.record.startedAt);
  return { fields: {}, misc: {} };
}
