// `hil run --repeat 3` on the emulated erdma device with the real Linux 6.12 driver, as a user
// types it: each of two scenarios runs three times on one guest, one after another, each
// repetition with its own port, verbs trace and hardware trace slice; the table has a line per
// scenario (PASS when every repetition agrees) and the summary counts the flaky ones;
// verdicts.json keeps every repetition and the stability per scenario; the reports read it; and
// nothing is left running.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parseTrace } from "../../harness/protocol/trace.ts";
import { hil, hilWithRunDir, leftovers } from "../support/cli.ts";

t.setTimeout(10 * 60 * 1000);

interface Repetition {
  name: string;
  scenario?: string;
  repetition?: number;
  judgements: { profile: string; verdict: string }[];
  trace?: string;
  hwTrace?: string;
}

interface RunRecord {
  repeat?: number;
  boots: number;
  scenarios: Repetition[];
  stability?: { scenario: string; profile: string; verdicts: { [v: string]: number }; flaky: boolean }[];
  results: { id: string; verdict: string }[];
}

t.test("hil run --repeat 3: every repetition judged and traced, one stable line per scenario", async (t) => {
  const { iso, dir, r } = await hilWithRunDir(
    ["run", "--scenario", "drain-qp-idle,drain-twice", "--repeat", "3", "--rules", "linux", "--guests", "1"],
    t,
  );
  t.equal(r.exitCode, 0, `every repetition PASS: exit 0\n${r.stdout}${r.stderr}`.slice(0, 6000));
  t.match(r.stdout, /^scenario\s+linux\s+reason$/m);
  t.match(r.stdout, /^drain-qp-idle\s+PASS\s+every rule holds$/m);
  t.match(r.stdout, /^drain-twice\s+PASS\s+every rule holds$/m);
  t.notMatch(r.stdout, /#\d/, "the table has a line per scenario, not per repetition");
  // the six probe checks and the six repetitions, as today's line counts every result
  t.match(r.stdout, /^hil: 12 passed, 0 failed, 0 flaky$/m);
  t.match(r.stderr, /\[suite\] 2 scenario\(s\) x 3 repetitions on erdma, kernel executor/);
  t.match(r.stderr, /6 run\(s\) of 2 scenario\(s\), 1 boot\(s\)/, "one guest for all six");

  const record = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8")) as RunRecord;
  t.equal(record.repeat, 3);
  t.same(
    record.scenarios.map((s) => [s.name, s.scenario, s.repetition, s.judgements.map((j) => j.verdict)]),
    [
      ["drain-qp-idle#1", "drain-qp-idle", 1, ["PASS"]],
      ["drain-qp-idle#2", "drain-qp-idle", 2, ["PASS"]],
      ["drain-qp-idle#3", "drain-qp-idle", 3, ["PASS"]],
      ["drain-twice#1", "drain-twice", 1, ["PASS"]],
      ["drain-twice#2", "drain-twice", 2, ["PASS"]],
      ["drain-twice#3", "drain-twice", 3, ["PASS"]],
    ],
  );
  t.same(
    record.results.filter((x) => x.id.includes("[")).map((x) => `${x.id} ${x.verdict}`),
    record.scenarios.map((s) => `${s.name}[linux] PASS`),
  );
  t.same(
    record.stability?.map((s) => [s.scenario, s.profile, s.verdicts, s.flaky]),
    [
      ["drain-qp-idle", "linux", { PASS: 3 }, false],
      ["drain-twice", "linux", { PASS: 3 }, false],
    ],
  );
  const ports: string[] = [];
  for (const [i, s] of record.scenarios.entries()) {
    t.equal(s.trace, `traces/${s.name}.jsonl`, `${s.name}: its own verbs trace`);
    t.equal(s.hwTrace, `traces/${s.name}.hw.jsonl`, `${s.name}: its own hardware trace`);
    const records = parseTrace(readFileSync(join(dir, s.trace ?? "none"), "utf8"));
    const listen = records.find((x) => x.ev === "cmd" && x.line.startsWith("listen "));
    const port = listen?.ev === "cmd" ? /port=(\d+)/.exec(listen.line)?.[1] : undefined;
    t.equal(port, String(7600 + i), `${s.name} listens on its own port`);
    ports.push(port ?? "?");
    const hw = readFileSync(join(dir, s.hwTrace ?? "none"), "utf8");
    t.match(hw, new RegExp(`"sport":${7600 + i}`), `${s.name}: its hardware slice has its connection`);
  }
  t.equal(new Set(ports).size, 6);

  const ktap = await hil(["report", dir, "--format", "ktap", "--out", "-"], iso.env);
  t.equal(ktap.exitCode, 0, ktap.stderr);
  t.match(ktap.stdout, /^ok \d+ drain-twice repetition 3$/m);
  t.match(ktap.stdout, /^# stability: drain-twice linux: stable over 3 repetitions, pass:3$/m);
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
