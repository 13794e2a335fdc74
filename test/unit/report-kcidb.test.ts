// KCIDB v5.0 JSON of a run directory: ids, paths and statuses as the schema wants them, the
// patchset hash KCIDB defines, XFAIL as a FAIL with an incident of its issue, git fields for a
// git base, a size that grows with failures and not with passes, and validation against the
// vendored schema twice: with ajv (what `hil report` checks at run time) and with kcidb-io's own
// validator (jsonschema's Draft 7 validator with its format checker, Debian's python3-jsonschema,
// installed when missing; kcidb-io itself is on PyPI only, out of this machine's reach).
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import t from "tap";
import { renderReport } from "../../harness/cli/report-command.ts";
import { KCIDB_ORIGIN, type KcidbReport, patchsetHash, renderKcidb } from "../../harness/report/kcidb.ts";
import { kcidbGitUrl } from "../../harness/report/kcidb-checkout.ts";
import { KCIDB_SCHEMA_FILE, validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { ensureHostPackages } from "../../util/apt.ts";
import { PATCH_HASHES, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const MUTANT = fileURLToPath(new URL("../fixtures/rundir-mutant", import.meta.url));
const KCIDB_CHECK = fileURLToPath(new URL("../support/kcidb-check.py", import.meta.url));
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

let installed: Promise<unknown> | undefined;

/** The errors kcidb-io's validator finds in `doc` (Draft 7 and its format checker, on the vendored schema). */
async function kcidbIoErrors(doc: unknown): Promise<string[]> {
  installed ??= ensureHostPackages(["python3-jsonschema", "python3-rfc3987"]);
  await installed;
  const r = await execa("/usr/bin/python3", [KCIDB_CHECK, KCIDB_SCHEMA_FILE], {
    input: JSON.stringify(doc),
    reject: false,
  });
  if (r.exitCode !== 0) throw new Error(`the kcidb-io check did not run: ${r.stderr.slice(-2000)}`);
  const out = JSON.parse(r.stdout) as { errors: string[]; formats: string[] };
  if (!out.formats.includes("uri"))
    throw new Error("jsonschema checks no uri format: python3-rfc3987 is missing");
  return out.errors;
}

const mutantRecord = async () => JSON.parse(await readFile(join(MUTANT, "verdicts.json"), "utf8"));
const kcidbOf = async (record: unknown) => renderKcidb(await loadRunDir(await writeRunDir(record)));
const bytes = (doc: KcidbReport) => JSON.stringify(doc).length;

t.test("the real run", async (t) => {
  const doc = await renderKcidb(await loadRunDir(FIXTURE), { urlBase: "https://ci.example.org/runs/42/" });
  t.same(doc.version, { major: 5, minor: 0 });
  t.equal(doc.checkouts[0]?.patchset_hash, "", "no series: the empty patchset hash");
  t.equal(doc.builds[0]?.checkout_id, doc.checkouts[0]?.id);
  const ids = new Set(doc.tests.map((x) => x.id));
  t.equal(ids.size, doc.tests.length, "test ids are unique");
  for (const x of doc.tests) {
    t.match(x.id, new RegExp(`^${KCIDB_ORIGIN}:`));
    t.match(x.path, /^([a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*)?$/);
    t.ok(["FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"].includes(x.status), `${x.path}: ${x.status}`);
  }
  const hang = doc.tests.find((x) => x.path === "erdma_hil.fault-stall-sq-drain.linux.rule_hang");
  t.match(hang, { status: "FAIL", misc: { hil_verdict: "XFAIL" } }, "XFAIL is a FAIL");
  t.notOk(hang && "waived" in hang, "KCIDB v5.0 has no waived");
  t.match(hang?.log_excerpt, /__ib_drain_sq/);
  const incident = doc.incidents?.find((i) => i.test_id === hang?.id);
  t.match(incident, { present: true }, "the hang is an incident of an issue");
  t.match(
    doc.issues?.find((i) => i.id === incident?.issue_id),
    { culprit: { harness: true }, report_subject: /fault-stall-sq-drain/ },
    "the expected hang's issue is the fault the scenario injects",
  );
  const bug = doc.tests.find((x) => x.path === "erdma_hil.partial-post-rq-overflow.ib.rule_5");
  const bugIssue = doc.issues?.find(
    (i) => i.id === doc.incidents?.find((x) => x.test_id === bug?.id)?.issue_id,
  );
  t.match(
    bugIssue,
    {
      culprit: { code: true },
      report_subject: "known bug: drivers/infiniband/hw/erdma/erdma_qp.c:erdma_post_recv",
    },
    "a known driver bug's issue is the code's",
  );
  const scen = doc.tests.find((x) => x.path === "erdma_hil.fault-stall-sq-drain.linux");
  t.equal(scen?.log_url, "https://ci.example.org/runs/42/traces/fault-stall-sq-drain.jsonl");
  t.same(
    scen?.output_files?.map((f) => f.name),
    ["fault-stall-sq-drain.jsonl", "fault-stall-sq-drain.hw.jsonl"],
  );
});

t.test("patchsets: recorded, from <run>/series, or unknown", async (t) => {
  t.equal(patchsetHash([]), "");
  t.equal(patchsetHash(PATCH_HASHES), sha256(`${PATCH_HASHES[0]}\n${PATCH_HASHES[1]}\n`));
  const doc = await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())));
  t.equal(doc.checkouts[0]?.patchset_hash, patchsetHash(PATCH_HASHES));
  t.same(
    ((doc.checkouts[0]?.patchset_files ?? []) as Array<{ name: string }>).map((f) => f.name),
    ["0001-a.patch", "0002-b.patch"],
  );
  const { series: _, ...unrecorded } = syntheticRecord();
  const dir = await writeRunDir(unrecorded);
  const unknown = await renderKcidb(await loadRunDir(dir));
  t.notOk(
    "patchset_hash" in (unknown.checkouts[0] ?? {}),
    "a series the run does not carry: no hash claimed",
  );
  await mkdir(join(dir, "series"));
  await writeFile(join(dir, "series", "0001-x.patch"), "patch one\n");
  const fromDir = await renderKcidb(await loadRunDir(dir));
  t.equal(fromDir.checkouts[0]?.patchset_hash, sha256(`${sha256("patch one\n")}\n`));
});

t.test("every verdict's status", async (t) => {
  const doc = await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())));
  const by = (p: string) => doc.tests.find((x) => x.path === `erdma_hil.${p}`);
  t.equal(by("s-fail.ib")?.status, "FAIL");
  t.notOk(
    doc.incidents?.some((i) => i.test_id === by("s-fail.ib")?.id),
    "a FAIL has no incident",
  );
  t.equal(by("s-error.ib")?.status, "ERROR");
  t.equal(by("s-miss.ib")?.status, "MISS");
  t.equal(by("s-skip.ib")?.status, "SKIP");
  t.match(by("s-xpass.ib"), { status: "PASS", comment: /^XPASS/ });
  t.match(
    doc.incidents?.find((i) => i.test_id === by("s-xpass.ib.rule_5")?.id),
    { present: false },
    "an XPASS: the issue was looked for and not seen",
  );
  const broken = await renderKcidb(
    await loadRunDir(
      await writeRunDir({
        kernel: "debian:6.12",
        results: [{ id: "suite", title: "the drain suite runs", verdict: "ERROR", reason: "boot failed" }],
      }),
    ),
  );
  t.match(broken.tests, [{ path: "erdma_hil", status: "MISS" }], "a suite that could not run is a MISS");
});

t.test("valid for ajv and for kcidb-io's validator on the vendored KCIDB v5.0 schema", async (t) => {
  const docs = {
    "the real run": await renderKcidb(await loadRunDir(FIXTURE)),
    "the real mutant run": await kcidbOf(await mutantRecord()),
    "the synthetic run": await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())), {
      urlBase: "https://x.example/r",
    }),
  };
  for (const [what, doc] of Object.entries(docs)) {
    const r = validateKcidb(doc);
    t.same(r.errors, [], `${what}: no ajv errors`);
    t.equal(r.valid, true);
    t.same(await kcidbIoErrors(doc), [], `${what}: kcidb-io's validator agrees`);
  }
  const bad = structuredClone(docs["the real run"]) as unknown as { tests: Array<Record<string, unknown>> };
  (bad.tests[0] as Record<string, unknown>).status = "XFAIL";
  const r = validateKcidb(bad);
  t.equal(r.valid, false, "the schema refuses a status it does not know");
  t.match(r.errors.join("\n"), /\/tests\/0\/status/);
  t.match((await kcidbIoErrors(bad)).join("\n"), /\/tests\/0\/status/, "and so does kcidb-io's validator");
  (bad.tests[0] as Record<string, unknown>).status = "FAIL";
  (bad.tests[0] as Record<string, unknown>).waived = true;
  t.match(
    (await kcidbIoErrors(bad)).join("\n"),
    /'waived' was unexpected/,
    "KCIDB v5.0 as released has no waived (kcidb-io c8f1122)",
  );
  t.equal(validateKcidb(bad).valid, false, "ajv refuses it too");
});

t.test("the size grows with failures, not with passes", async (t) => {
  const record = await mutantRecord();
  const base = await kcidbOf(record);
  const morePasses = structuredClone(record);
  for (const s of morePasses.scenarios)
    for (const j of s.judgements)
      for (let k = 0; k < 8; k++)
        j.rules.push({
          rule: `x${k}`,
          title: "a rule that holds",
          verdict: k % 2 ? "PASS" : "SKIP",
          reason: "ok",
        });
  const more = await kcidbOf(morePasses);
  t.equal(more.tests.length, base.tests.length, "rules that hold or have nothing to judge add no test");
  t.equal(bytes(more), bytes(base), "nor a byte");

  const oneFail = structuredClone(record);
  const rule = oneFail.scenarios[0].judgements[0].rules.find(
    (r: { verdict: string }) => r.verdict === "PASS",
  );
  Object.assign(rule, {
    verdict: "FAIL",
    reason: "WR 7 completed twice",
    evidence: ["- WR 7 completed twice", '  #9 {"ev":"cqe","wr_id":7}'],
    problems: [{ reason: "WR 7 completed twice", wrs: [{ qp: "qp", queue: "sq", wrId: 7 }] }],
  });
  oneFail.scenarios[0].judgements[0].verdict = "FAIL";
  const failed = await kcidbOf(oneFail);
  t.equal(failed.tests.length, base.tests.length + 1, "a FAIL rule is a test of its own");
  t.ok(bytes(failed) > bytes(base), "and makes the document larger");

  const passing = structuredClone(record);
  const idle = passing.scenarios.find((s: { name: string }) => s.name === "drain-rq-idle");
  passing.scenarios.push({ ...structuredClone(idle), name: "drain-rq-idle-again" });
  const grown = await kcidbOf(passing);
  const perResult = (bytes(grown) - bytes(base)) / idle.judgements.length;
  t.equal(
    grown.tests.length,
    base.tests.length + idle.judgements.length,
    "a passing scenario: one test per profile",
  );
  t.ok(perResult < 800, `a passing scenario and profile costs ${perResult} bytes`);
});

t.test("a git base: the checkout's repository URL, commit and branch", async (t) => {
  const dir = t.testdir({ Makefile: "all:\n", Kconfig: "" });
  const git = (args: string[], when?: string) =>
    execa("git", ["-C", dir, ...args], {
      env: when ? { GIT_AUTHOR_DATE: when, GIT_COMMITTER_DATE: when } : {},
    });
  await git(["init", "-q", "-b", "linux-next"]);
  await git(["config", "user.email", "hil@example.org"]);
  await git(["config", "user.name", "hil"]);
  await git(["add", "."]);
  await git(["commit", "-q", "-m", "one"], "2026-01-01T00:00:00Z");
  await git(["tag", "v6.99"]);
  await git(["remote", "add", "origin", "https://user:secret@git.example.org/pub/linux.git"]);
  const first = (await git(["rev-parse", "HEAD"])).stdout.trim();
  const record = {
    kernel: `git ${dir} + 1 patch(es) from x.mbox`,
    startedAt: "2026-01-01T01:00:00.000Z",
    series: { patches: [{ name: "0001-a.patch", sha256: PATCH_HASHES[0] }] },
    results: [{ id: "kernel-release", title: "the kernel", verdict: "PASS", reason: "ok" }],
  };
  const doc = await kcidbOf(record);
  t.match(doc.checkouts[0], {
    tree_name: `git ${dir}`,
    git_repository_url: "https://git.example.org/pub/linux.git",
    git_commit_hash: first,
    git_repository_branch: "linux-next",
    git_commit_name: "v6.99",
  });
  t.notMatch(JSON.stringify(doc), /secret/, "the remote's credentials stay out");
  t.same(validateKcidb(doc).errors, []);
  t.same(await kcidbIoErrors(doc), []);

  await writeFile(join(dir, "Kconfig"), "# later\n");
  await git(["commit", "-q", "-am", "two"], "2026-01-01T02:00:00Z");
  const later = await kcidbOf(record);
  t.equal(later.checkouts[0]?.git_commit_hash, first, "a tree that moved on: HEAD when the run started");
  t.notOk("git_repository_branch" in (later.checkouts[0] ?? {}), "no branch claimed once HEAD moved");
  t.match(later.checkouts[0]?.misc, { git_note: /HEAD moved after the run started/ });

  await git(["remote", "set-url", "origin", "git@git.example.org:pub/linux.git"]);
  const ssh = await kcidbOf(record);
  t.notOk("git_repository_url" in (ssh.checkouts[0] ?? {}), "an ssh remote is no URL KCIDB takes");
  t.match(ssh.checkouts[0]?.misc, { git_remote: "origin is not an https:// URL" });
  t.equal(kcidbGitUrl("git://git.kernel.org/pub/scm/linux.git"), undefined, "KCIDB v5.0 takes https:// only");

  const debian = await kcidbOf({
    kernel: "debian:6.12",
    versions: { hil: "0.1.0", kernel: { spec: "debian:6.12", debianVersion: "6.12.57-1~bpo12+1" } },
    results: record.results,
  });
  t.match(debian.checkouts[0], {
    tree_name: "debian:6.12",
    misc: {
      debian_source_package: "linux-source-6.12",
      debian_suite: "bookworm-backports",
      debian_package_version: "6.12.57-1~bpo12+1",
    },
  });
  t.notOk(
    Object.keys(debian.checkouts[0] ?? {}).some((k) => k.startsWith("git_")),
    "a Debian source package is no git checkout",
  );
});

t.test("hil report --format kcidb refuses to write a document KCIDB would refuse", async (t) => {
  const run = await loadRunDir(FIXTURE);
  const text = await renderReport(run, { format: "kcidb", urlBase: "https://ci.example.org/runs/42" });
  t.equal(JSON.parse(text).version.major, 5);
  await t.rejects(renderReport(run, { format: "kcidb", urlBase: "not a url" }), {
    message: /does not validate against the KCIDB v5\.0 schema/,
    detail: /log_url: must match format "uri"[\s\S]*--url-base not a url/,
  });
});

t.test(
  "a <repo>@<ref> base: the commit, branch and URL the run recorded, not the repository's now",
  async (t) => {
    const dir = t.testdir({ Makefile: "all:\n", Kconfig: "" });
    const git = (args: string[]) => execa("git", ["-C", dir, ...args]);
    await git(["init", "-q", "-b", "main"]);
    await git(["-c", "user.email=hil@example.org", "-c", "user.name=hil", "add", "."]);
    await git(["-c", "user.email=hil@example.org", "-c", "user.name=hil", "commit", "-q", "-m", "one"]);
    await git(["tag", "v7.0-rc1"]);
    const commit = (await git(["rev-parse", "HEAD"])).stdout.trim();
    const tree = (await git(["rev-parse", "HEAD^{tree}"])).stdout.trim();
    const recorded = (ref: string, remoteUrl?: string) => ({
      kernel: `${dir}@${ref}`,
      startedAt: "2026-01-01T01:00:00.000Z",
      versions: {
        hil: "0.1.0",
        kernel: {
          spec: `${dir}@${ref}`,
          git: {
            repository: dir,
            ref,
            commit,
            tree,
            branch: "for-next",
            ...(remoteUrl ? { remoteUrl } : {}),
          },
        },
      },
      results: [{ id: "kernel-release", title: "the kernel", verdict: "PASS", reason: "ok" }],
    });
    const doc = await kcidbOf(
      recorded("for-next", "https://u:p@git.kernel.org/pub/scm/linux/kernel/git/rdma/rdma.git"),
    );
    t.match(doc.checkouts[0], {
      tree_name: `${dir}@for-next`,
      git_commit_hash: commit,
      git_commit_name: "v7.0-rc1",
      git_repository_branch: "for-next",
      git_repository_url: "https://git.kernel.org/pub/scm/linux/kernel/git/rdma/rdma.git",
      misc: { git_ref: "for-next", git_tree: dir },
    });
    t.same(validateKcidb(doc).errors, []);
    const noRemote = await kcidbOf(recorded("for-next"));
    t.notOk("git_repository_url" in (noRemote.checkouts[0] ?? {}));
    t.match(noRemote.checkouts[0]?.misc, { git_remote: "the branch has no remote" });

    const other = await kcidbOf({
      ...recorded("for-next"),
      versions: {
        hil: "0.1.0",
        kernel: {
          spec: `${dir}@for-next`,
          git: { repository: dir, ref: "for-next", commit: "f".repeat(40), tree },
        },
      },
    });
    t.not(other.checkouts[0]?.id, noRemote.checkouts[0]?.id, "two commits of one branch are two checkouts");
  },
);
