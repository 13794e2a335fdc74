// hil diff --traces on real runs: the same scenarios on Linux 6.12 with the emulated erdma as it
// behaved in 2022 (erdma-2022: stops processing WRs in ERROR and ignores REFLUSH) and as Linux 6.2+
// expects it (erdma-reflush), then erdma-reflush again. Against erdma-2022, erdma-reflush completes
// what is posted in ERROR (WR_FLUSH_ERR where 2022 gives no completion) and its drains return where
// 2022's hang: the diff names those scenarios, their WRs and drains, exits 1. Two runs of
// erdma-reflush have the same completions: no difference, exit 0. Nothing is left running or on disk.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(30 * 60 * 1000);

const DIFFERING = ["drain-qp-idle", "post-send-in-error", "post-recv-in-error", "post-in-error-then-drain"];
const SAME = ["partial-post-rq-overflow"];
const SCENARIOS = [...DIFFERING, ...SAME].join(",");

t.test("erdma-2022 vs erdma-reflush on Linux 6.12, and erdma-reflush twice", async (t) => {
  const iso = isolate();
  const root = t.testdir({});
  const run = (profile: string, dir: string) =>
    hil(
      [
        "run",
        "--scenario",
        SCENARIOS,
        "--kernel",
        "debian:6.12",
        "--device-profile",
        profile,
        "--run-dir",
        dir,
      ],
      iso.env,
    );
  const [a, b, c] = ["A", "B", "C"].map((d) => join(root, d)) as [string, string, string];
  const old = await run("erdma-2022", a);
  t.equal(old.exitCode, 1, `erdma-2022 hangs the drains: ${old.stderr.slice(-3000)}`);
  const reflush = await run("erdma-reflush", b);
  t.equal(reflush.exitCode, 0, `erdma-reflush drains: ${reflush.stderr.slice(-3000)}`);
  const again = await run("erdma-reflush", c);
  t.equal(again.exitCode, 0, again.stderr.slice(-3000));

  const r = await hil(["diff", "--traces", a, b, "--out-dir", join(root, "diff")], iso.env);
  t.equal(r.exitCode, 1, `${r.stdout}${r.stderr}`.slice(-4000));
  t.comment(r.stdout);
  t.match(
    r.stdout,
    new RegExp(`^reference: erdma-2022: ${a} \\(erdma-2022, kernel debian:6\\.12 `, "m"),
    "the reference run named",
  );
  for (const s of DIFFERING) t.match(r.stdout, new RegExp(`^${s}: completions differ$`, "m"), s);
  t.match(
    r.stdout,
    /^ {2}qp drain 1 \(qp\): erdma-2022: no return \| erdma-reflush: returned$/m,
    "the drain that hangs on erdma-2022",
  );
  t.match(
    r.stdout,
    /^ {2}qp sq wr 1000-1003: erdma-2022: no completion \| erdma-reflush: WR_FLUSH_ERR on cq$/m,
    "sends posted in ERROR",
  );
  t.match(
    r.stdout,
    /^ {2}qp rq wr 2000-2003: erdma-2022: no completion \| erdma-reflush: WR_FLUSH_ERR on rcq$/m,
    "receives posted in ERROR",
  );
  t.match(
    r.stdout,
    /^ {2}qp sq wr 1000-1007: erdma-2022: no completion \| erdma-reflush: WR_FLUSH_ERR on cq$/m,
    "the eight sends of post-in-error-then-drain",
  );
  t.match(
    r.stdout,
    /^ {2}verdict ib, iwarp-rdmac, linux: erdma-2022: FAIL \| erdma-reflush: PASS$/m,
    "the verdicts that differ",
  );
  t.match(
    r.stdout,
    new RegExp(`^the same: ${SAME.join(", ")}$`, "m"),
    "the scenarios whose completions agree",
  );
  t.match(
    r.stdout,
    /^erdma-reflush vs erdma-2022: 4 of 5 scenarios with different completions \(\d+ WRs, \d+ drains? differ\), \d+ verdicts differ$/m,
    "the summary",
  );
  const json = JSON.parse(readFileSync(join(root, "diff", "trace-diff.json"), "utf8"));
  t.same(
    json.candidates[0].scenarios
      .filter((s: { completionsDiffer: boolean }) => s.completionsDiffer)
      .map((s: { scenario: string }) => s.scenario)
      .sort(),
    [...DIFFERING].sort(),
  );
  const html = readFileSync(join(root, "diff", "trace-diff.html"), "utf8");
  for (const s of DIFFERING) {
    t.match(html, `id="c0-${s}-reference"`, `${s}: the erdma-2022 timeline`);
    t.match(html, `id="c0-${s}-candidate"`, `${s}: the erdma-reflush timeline beside it`);
  }

  const same = await hil(["diff", "--traces", b, c], iso.env);
  t.equal(same.exitCode, 0, same.stdout);
  t.match(
    same.stdout,
    /^C vs B: no difference \(5 scenarios, \d+ WRs and drains compared\)$/m,
    `two erdma-reflush runs: ${same.stdout.slice(-3000)}`,
  );

  const three = await hil(["diff", "--traces", a, b, c], iso.env);
  t.equal(three.exitCode, 1);
  t.match(three.stdout, /^closest: \S+ \(erdma-reflush\)$/m, "runs named by directory: two share a profile");

  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
