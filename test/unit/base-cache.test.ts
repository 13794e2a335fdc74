// hil validate's cached base side: when a cached base run is reused (not with --no-base-cache, not
// when damaged, never under a key whose fresh runs disagreed), when a fresh one is kept (not with
// an ERROR or MISS: the harness's fault), how disagreeing runs mark their key unstable; and the
// cache itself: a kept run is copied back whole into a new run directory, verdicts.json as it was.
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import type { RunRecord } from "../../harness/rundir/schema.ts";
import type { JobRecord } from "../../harness/workflows/job/job.ts";
import { baseCacheLine, whenText } from "../../harness/workflows/validate/base.ts";
import {
  BASE_CACHE_KIND,
  type BaseEntryMeta,
  type FoundBase,
  lookupBase,
  movedVerdicts,
  reuseDecision,
  storeBase,
  storeDecision,
  verdictCount,
} from "../../harness/workflows/validate/base-cache.ts";
import type { BaseKeyInputs } from "../../harness/workflows/validate/base-cache-key.ts";
import { bothSettled, sidesAtOnceByDefault } from "../../harness/workflows/validate/validate.ts";
import { type Cell, runRecordOf } from "../support/run-records.ts";

const RUNDIR = fileURLToPath(new URL("../fixtures/rundir/", import.meta.url));

const CELLS: Cell[] = [
  ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
  ["post-send-in-error", "ib", "PASS", { 1: "PASS", 5: "PASS" }],
  ["partial-post-rq-overflow", "linux", "XFAIL", { 5: "XFAIL" }],
];
const GOOD = runRecordOf(CELLS, { probe: "PASS" }) as JobRecord;

const META: BaseEntryMeta = {
  format: "hil-validate-base-entry/1",
  key: "k",
  inputs: {},
  startedAt: "2026-12-02T10:50:01.000Z",
  wallMs: 1000,
  storedAt: "2026-12-02T10:51:00.000Z",
  runs: 1,
};
const intact = (meta: Partial<BaseEntryMeta> = {}, record = GOOD): FoundBase => ({
  state: "intact",
  meta: { ...META, ...meta },
  record,
});

t.test("reuse: an intact entry, unless told otherwise, damaged or unstable", async (t) => {
  t.same(reuseDecision(intact(), { fresh: false }), { reuse: true });
  t.same(reuseDecision(intact(), { fresh: true }), { reuse: false, why: "--no-base-cache" });
  t.same(reuseDecision({ state: "absent" }, { fresh: false }), {
    reuse: false,
    why: "no base run cached under this key",
  });
  t.match(reuseDecision({ state: "damaged", problem: "run/verdicts.json is missing" }, { fresh: false }), {
    reuse: false,
    why: /damaged \(run\/verdicts\.json is missing\)/,
  });
  const unstable = intact({ unstable: [{ key: "post-send-in-error[ib]", verdicts: ["PASS", "FAIL"] }] });
  t.match(reuseDecision(unstable, { fresh: false }), {
    reuse: false,
    why: /differed between runs under this key \(post-send-in-error\[ib\]: PASS, FAIL\), so it runs every time/,
  });
});

t.test("keep: a run with an ERROR or MISS is not kept, whatever was cached", async (t) => {
  for (const bad of ["ERROR", "MISS"] as const) {
    const run = runRecordOf([...CELLS, ["drain-sq-idle", "ib", bad]], { probe: "PASS" });
    const d = storeDecision(run, { state: "absent" });
    t.match(d, {
      store: false,
      why: new RegExp(`1 verdict\\(s\\) ERROR or MISS \\(drain-sq-idle\\[ib\\] ${bad}\\)`),
    });
    t.match(storeDecision(run, intact()), { store: false });
  }
  const probeError = runRecordOf(CELLS, { probe: "ERROR" });
  t.match(storeDecision(probeError, { state: "absent" }), { store: false, why: /erdma-probe ERROR/ });
  const ruleMiss = runRecordOf([["drain-qp-idle", "linux", "PASS", { 9: "MISS" }]]);
  t.match(storeDecision(ruleMiss, { state: "absent" }), { store: false }, "a rule's MISS counts too");
});

t.test(
  "keep: a first run; a run that agrees counts; one that disagrees marks the key unstable",
  async (t) => {
    t.same(storeDecision(GOOD, { state: "absent" }), { store: true, runs: 1, unstable: [], moved: [] });
    t.same(
      storeDecision(GOOD, { state: "damaged", problem: "x" }),
      { store: true, runs: 1, unstable: [], moved: [] },
      "a damaged entry is replaced",
    );
    t.same(storeDecision(GOOD, intact({ runs: 2 })), { store: true, runs: 3, unstable: [], moved: [] });
    const flipped = runRecordOf(
      [
        ["drain-qp-idle", "linux", "PASS", { 9: "PASS" }],
        ["post-send-in-error", "ib", "FAIL", { 1: "FAIL", 5: "PASS" }],
        ["partial-post-rq-overflow", "linux", "XFAIL", { 5: "XFAIL" }],
      ],
      { probe: "PASS" },
    );
    const d = storeDecision(flipped, intact());
    t.same(d, {
      store: true,
      runs: 2,
      moved: [
        { key: "post-send-in-error[ib]", verdicts: ["PASS", "FAIL"] },
        { key: "post-send-in-error[ib] rule 1", verdicts: ["PASS", "FAIL"] },
      ],
      unstable: [
        { key: "post-send-in-error[ib]", verdicts: ["PASS", "FAIL"] },
        { key: "post-send-in-error[ib] rule 1", verdicts: ["PASS", "FAIL"] },
      ],
    });
    const again = storeDecision(
      GOOD,
      intact({ runs: 2, unstable: d.store ? d.unstable : [] }, flipped as JobRecord),
    );
    t.match(again, { store: true, runs: 3 }, "once unstable, always: an agreeing run does not clear it");
    t.same(again.store && again.unstable[0], { key: "post-send-in-error[ib]", verdicts: ["PASS", "FAIL"] });
    t.same(movedVerdicts(GOOD, runRecordOf(CELLS.slice(0, 2), { probe: "PASS" })), [
      { key: "partial-post-rq-overflow[linux]", verdicts: ["XFAIL", "-"] },
      { key: "partial-post-rq-overflow[linux] rule 5", verdicts: ["XFAIL", "-"] },
    ]);
  },
);

t.test("the output's line", async (t) => {
  t.equal(whenText("2026-12-02T10:50:01.123Z"), "2026-12-02 10:50:01 UTC");
  t.equal(
    baseCacheLine({
      reused: true,
      key: "0123456789abcdef0123",
      from: "2026-12-02T10:50:01.123Z",
      verdicts: 7,
    }),
    "base: 7 verdicts reused from 2026-12-02 10:50:01 UTC, key 0123456789abcdef (--no-base-cache runs the base again)",
  );
  t.equal(
    baseCacheLine({
      reused: false,
      key: "0123456789abcdef0123",
      why: "--no-base-cache",
      stored: false,
      note: "1 MISS",
    }),
    "base: ran (--no-base-cache); not cached: 1 MISS, key 0123456789abcdef",
  );
  t.equal(
    baseCacheLine({
      reused: false,
      key: "0123456789abcdef0123",
      why: "no base run cached under this key",
      stored: true,
    }),
    "base: ran (no base run cached under this key); cached, key 0123456789abcdef",
  );
  t.equal(verdictCount(GOOD), 4, "the probe check and three scenario x rule set verdicts");
});

function withCacheDir(t: Test): string {
  const dir = t.testdir({});
  const saved = process.env.HIL_CACHE_DIR;
  process.env.HIL_CACHE_DIR = join(dir, "cache");
  t.teardown(() => {
    if (saved === undefined) delete process.env.HIL_CACHE_DIR;
    else process.env.HIL_CACHE_DIR = saved;
  });
  return dir;
}

const INPUTS = { kernel: "k" } as unknown as BaseKeyInputs;

t.test("a kept run comes back whole in a new run directory; --no-base-cache copies nothing", async (t) => {
  const dir = withCacheDir(t);
  const key = "a".repeat(64);
  const fresh = join(dir, "first", "base");
  cpSync(RUNDIR, fresh, { recursive: true });
  rmSync(join(fresh, "synthetic.ts"));
  rmSync(join(fresh, "README.md"));
  writeFileSync(join(fresh, ".hil-run.lock"), "1");
  const record = JSON.parse(readFileSync(join(fresh, "verdicts.json"), "utf8")) as JobRecord;

  const none = await lookupBase(key, join(dir, "none", "base"), { fresh: false });
  t.same(none.found, { state: "absent" });
  t.same(readdirSync(dir).sort(), ["cache", "first"], "nothing copied, no run directory made");

  const decision = storeDecision(record, none.found);
  if (!decision.store) throw new Error("the fixture run is all judged");
  const meta = await storeBase(key, INPUTS, fresh, record, decision);
  t.equal(meta.runs, 1);

  const forced = await lookupBase(key, join(dir, "forced", "base"), { fresh: true });
  t.same(forced.decision, { reuse: false, why: "--no-base-cache" });
  t.equal(forced.found.state, "intact", "what is cached is read, to compare the fresh run with");
  t.notOk(forced.reused);
  t.same(readdirSync(dir).sort(), ["cache", "first"]);

  const target = join(dir, "second", "base");
  const hit = await lookupBase(key, target, { fresh: false });
  t.ok(hit.reused, "reused");
  t.same(hit.reused, record as RunRecord);
  t.equal(
    readFileSync(join(target, "verdicts.json"), "utf8"),
    readFileSync(join(fresh, "verdicts.json"), "utf8"),
    "verdicts.json as the fresh run wrote it",
  );
  t.same(
    readdirSync(join(target, "traces")).sort(),
    readdirSync(join(fresh, "traces")).sort(),
    "its traces too",
  );
  t.notOk(readdirSync(target).includes(".hil-run.lock"), "not the old run's lock");
  t.same(readdirSync(join(dir, "cache", BASE_CACHE_KIND)), [key], "one entry, no lock or temp left");

  await t.rejects(
    lookupBase(key, target, { fresh: false }),
    /already holds a run/,
    "a used run directory is refused",
  );
});

t.test("a damaged entry is not reused; an unstable one is not either", async (t) => {
  const dir = withCacheDir(t);
  const key = "b".repeat(64);
  const fresh = join(dir, "first");
  mkdirSync(fresh);
  writeFileSync(join(fresh, "verdicts.json"), `${JSON.stringify(GOOD)}\n`);
  await storeBase(key, INPUTS, fresh, GOOD, { store: true, runs: 1, unstable: [], moved: [] });
  const entry = join(dir, "cache", BASE_CACHE_KIND, key);
  writeFileSync(
    join(entry, "run", "verdicts.json"),
    `${JSON.stringify({ ...GOOD, kernel: "debian:6.1" })}\n`,
  );
  const damaged = await lookupBase(key, join(dir, "second"), { fresh: false });
  t.match(damaged.found, {
    state: "damaged",
    problem: /run\/verdicts\.json is \d+ bytes, recorded \d+/,
  });
  t.notOk(damaged.reused);

  const flipped = runRecordOf([["drain-qp-idle", "linux", "FAIL", { 9: "FAIL" }]], { probe: "PASS" });
  const d = storeDecision(flipped, intact());
  if (!d.store) throw new Error("judged");
  await storeBase(key, INPUTS, fresh, GOOD, d);
  const unstable = await lookupBase(key, join(dir, "third"), { fresh: false });
  t.equal(unstable.found.state, "intact", "the entry was replaced");
  t.match(unstable.decision, { reuse: false, why: /differed between runs/ });
  t.notOk(unstable.reused);
  t.same(readdirSync(join(dir, "cache", BASE_CACHE_KIND)), [key], "replaced in place, nothing aside");
});

t.test("the two sides at once: by default on 4 CPUs or more; both are waited for", async (t) => {
  t.equal(sidesAtOnceByDefault(2), false);
  t.equal(sidesAtOnceByDefault(3), false);
  t.equal(sidesAtOnceByDefault(4), true);
  t.same(await bothSettled(Promise.resolve(1), Promise.resolve("b")), [1, "b"]);
  let otherDone = false;
  const slow = new Promise<string>((resolve) =>
    setTimeout(() => {
      otherDone = true;
      resolve("patched");
    }, 50),
  );
  await t.rejects(bothSettled(Promise.reject(new Error("base broke")), slow), /base broke/);
  t.ok(otherDone, "the other side finished before the failure was thrown");
  await t.rejects(
    bothSettled(Promise.resolve(1), Promise.reject(new Error("patched broke"))),
    /patched broke/,
  );
});
