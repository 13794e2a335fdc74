// hil bisect end to end on real guests: a four-patch series on debian:6.12 whose third patch (the
// planted bad commit, the flush-status-success mutant of fixtures/mutants) maps flushed CQEs to
// IB_WC_SUCCESS, and scenario post-send-in-error. The whole series FAILs, the base PASSes, and the
// third patch is found in two steps (ceil(log2(4))), with the rule that failed as evidence. A
// series that does not apply is bad input: exit 2 before any guest boots, nothing left behind.
import { cpSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import t from "tap";
import type { BisectResult } from "../../harness/workflows/bisect/bisect.ts";
import { hil, hilWithRunDir, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { unpackedKernelSource } from "../support/kernel-source.ts";

t.setTimeout(20 * 60 * 1000);

const SERIES = join(REPO_ROOT, "fixtures/series/bisect-flush-status-third.mbox");

t.test("the planted bad patch found in log2(n) steps", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["bisect", "--series", SERIES, "--scenario", "post-send-in-error"],
    t,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^first bad patch: 3\/4 "\[PATCH 3\/4\] RDMA\/erdma: report flushed work requests as successful"/m,
  );
  t.match(
    r.stdout,
    /^ {2}post-send-in-error\[linux\]: rule 1: WR 1000 posted to qp in ERR completed with SUCCESS, not WR_FLUSH_ERR/m,
    "the rule that failed, with the WR",
  );
  t.match(
    r.stdout,
    /^hil bisect: patch 3\/4 is the first bad one \(2 step\(s\) between the ends, 4 run\(s\)/m,
  );
  t.match(r.stderr, /\[bisect\] step 2: the first 3\/4 patch\(es\): bad/, "progress per step");

  const out = JSON.parse(readFileSync(join(dir, "bisect.json"), "utf8")) as BisectResult;
  t.equal(out.culprit?.index, 3);
  t.equal(out.searchSteps, Math.ceil(Math.log2(4)), "ceil(log2(4)) steps between the ends");
  t.same(
    out.steps.map((s) => [s.patches, s.word]),
    [
      [4, "bad"],
      [0, "good"],
      [2, "good"],
      [3, "bad"],
    ],
    "the bad end, the good end, then halving",
  );
  // each step is a whole run directory: its kernel had exactly the patches the step names
  const third = JSON.parse(readFileSync(join(dir, out.culprit?.runDir ?? "", "verdicts.json"), "utf8"));
  t.same(
    third.series.patches.map((p: { subject: string }) => p.subject.replace(/^\[PATCH \d\/4\] /, "")),
    [
      "RDMA/erdma: say why the SQ doorbell is rung per WQE",
      "RDMA/erdma: document the CEQ completion handler's context",
      "RDMA/erdma: report flushed work requests as successful",
    ],
    "the culprit's run: the first three patches",
  );
  const base = JSON.parse(readFileSync(join(dir, "steps/000-patches/verdicts.json"), "utf8"));
  t.notOk(base.series, "the good end ran the base, no series");
  const kcidb = await hil(["report", join(dir, out.culprit?.runDir ?? ""), "--format", "kcidb"], iso.env);
  t.equal(kcidb.exitCode, 0, kcidb.stderr);
  t.ok(JSON.parse(kcidb.stdout).tests.length > 0, "the culprit's run reports as KCIDB");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("a git range: the planted bad commit named by its hash", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  // a repository of debian:6.12's erdma driver, then the four patches as commits (git am)
  const repo = join(root, "linux");
  const erdma = "drivers/infiniband/hw/erdma";
  cpSync(join(await unpackedKernelSource("debian:6.12"), erdma), join(repo, erdma), { recursive: true });
  const git = async (...args: string[]) =>
    String(
      (
        await execa(
          "git",
          [
            "-c",
            "user.name=hil-test",
            "-c",
            "user.email=hil-test@localhost",
            "-c",
            "commit.gpgsign=false",
            ...args,
          ],
          { cwd: repo },
        )
      ).stdout,
    ).trim();
  await git("init", "-q");
  await git("add", "-A");
  await git("commit", "-q", "-m", "debian:6.12's erdma driver");
  await git("tag", "v6.12-debian");
  await git("am", "-q", SERIES);
  const planted = await git("rev-parse", "HEAD~1");
  const dir = join(root, "run");
  const r = await hil(
    [
      "bisect",
      "--git",
      repo,
      "--good",
      "v6.12-debian",
      "--bad",
      "HEAD",
      "--scenario",
      "post-send-in-error",
      "--run-dir",
      dir,
    ],
    iso.env,
  );
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    new RegExp(
      `^first bad commit: ${planted} "RDMA/erdma: report flushed work requests as successful" \\(3/4 of the range\\)$`,
      "m",
    ),
  );
  t.match(
    r.stdout,
    new RegExp(`^hil bisect: commit ${planted.slice(0, 12)} \\(3/4\\) is the first bad one \\(2 step`, "m"),
  );
  const out = JSON.parse(readFileSync(join(dir, "bisect.json"), "utf8")) as BisectResult;
  t.equal(out.culprit?.commit, planted);
  t.equal(out.series.range?.good.sha, await git("rev-parse", "v6.12-debian"), "the range's ends recorded");
  t.equal(out.series.patches.length, 4);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("a series that does not apply: exit 2 before anything boots", async (t) => {
  const series = join(REPO_ROOT, "fixtures/series/does-not-apply.mbox");
  const { iso, dir, r } = await hilWithRunDir(
    ["bisect", "--series", series, "--scenario", "post-send-in-error"],
    t,
  );
  t.equal(r.exitCode, 2, r.stderr);
  t.match(r.stderr, /^hil: error: patch 2\/2 .* does not apply to debian:6\.12: /m);
  t.notMatch(r.stderr, /\[guest\] booting/, "no guest booted");
  t.notOk(existsSync(join(dir, "bisect.json")), "no bisect.json");
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});

t.test("bad options: exit 2, one line naming the option, nothing written", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const cases: [string[], RegExp][] = [
    [["--scenario", "post-send-in-error"], /^hil: error: give the series: --series <mbox\|dir>, or --git /m],
    [
      ["--series", SERIES, "--git", ".", "--good", "HEAD", "--bad", "HEAD", "--scenario", "x"],
      /^hil: error: --series and --git\/--good\/--bad: give one series, not both$/m,
    ],
    [
      ["--series", SERIES, "--scenario", "x", "--repeat", "0"],
      /^hil: error: --repeat 0: expected a whole number/m,
    ],
    [
      ["--git", REPO_ROOT, "--good", "no-such-ref", "--bad", "HEAD", "--scenario", "x"],
      /^hil: error: --good no-such-ref: no such commit in /m,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await hil(["bisect", ...args, "--run-dir", dir], iso.env);
    t.equal(r.exitCode, 2, `${args.join(" ")}: ${r.stderr}`);
    t.match(r.stderr, message);
    t.notOk(existsSync(dir), "no run directory");
  }
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
