// hil repro rxe-user-recv-unflushed-6.1, as a user types it: on Linux 6.1 with the rxe fragment,
// the user RQ drain through librxe hangs in most runs (a race the responder's tasklet always
// loses; test/integration/scenario-rxe.test.ts runs the suite on 6.12's rxe).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { type CliResult, hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(30 * 60 * 1000);

interface RunRecord {
  executor: string;
  kernel: string;
  scenarios: {
    name: string;
    judgements: { profile: string; rules: { rule: string; verdict: string }[] }[];
  }[];
}

const readRecord = (dir: string): RunRecord =>
  JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as RunRecord;

t.test(
  "hil repro rxe-user-recv-unflushed-6.1: on Linux 6.1 the user RQ drain hangs (the first of up to three runs that shows it)",
  async (t) => {
    const iso = isolate();
    const root = t.testdir({});
    let dir = "";
    let r: CliResult | undefined;
    const outcomes: string[] = [];
    for (let attempt = 1; attempt <= 3 && r?.exitCode !== 0; attempt++) {
      dir = join(root, `run-${attempt}`);
      r = await hil(["repro", "rxe-user-recv-unflushed-6.1", "--run-dir", dir], iso.env);
      outcomes.push(/: (REPRODUCES|NOT REPRODUCED)\b/.exec(r.stdout)?.[1] ?? `exit ${r.exitCode}`);
    }
    t.comment(`runs: ${outcomes.join(", ")}`);
    t.equal(r?.exitCode, 0, `the case behaves as stated\n${r?.stderr.slice(-2000)}`);
    t.match(r?.stdout, /REPRODUCES \(3\/3 expected verdicts seen\)/);
    const record = readRecord(dir);
    t.equal(record.executor, "user");
    t.match(record.kernel, /debian:6\.1 \+ config rxe/, "6.1 with the rxe fragment");
    const idle = record.scenarios.find((s) => s.name === "drain-rq-idle");
    const hang = idle?.judgements.find((j) => j.profile === "linux")?.rules.find((x) => x.rule === "hang");
    t.equal(hang?.verdict, "FAIL", "the oracle's own verdict: repro leaves the known-bug record out");
    t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left running or on disk");
  },
);
