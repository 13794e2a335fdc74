/**
 * KCIDB I/O v5.0 (kernelci/kcidb-io kcidb_io/schema/v05_00.py; vendored in kcidb-schema/): one
 * checkout (the kernel base and the patch series applied to it; git fields for a git base, see
 * kcidb-checkout.ts), one build, and tests: one per probe check, one per scenario and oracle
 * profile, and one per rule that did not simply hold: a rule that held (PASS) or had nothing to
 * judge (SKIP) is a word in its scenario's test, not a test of its own, so the document grows with
 * what went wrong, not with what passed. A passing scenario's test carries its path, status,
 * duration, environment and trace URL and nothing else.
 *
 * Statuses: PASS, FAIL, ERROR, SKIP map to themselves; MISS (the harness could not run it) is
 * KCIDB's MISS, and a suite that broke before any scenario ran is one MISS test at the root path.
 * XFAIL is FAIL: the rule did fail (KCIDB's FAIL: "the test completed and reported the tested code
 * as faulty"), and that it was expected is an incident of an issue (kcidb-issues.ts): the known
 * bug's record, or the fault the scenario injects; PASS with a comment would tell a dashboard the
 * driver is right when it is not. XPASS is PASS with an incident saying the issue was not seen.
 * misc.hil_verdict keeps the harness's own word where it differs. KCIDB refuses NUL characters
 * in text: they are dropped.
 *
 * A repeated run (--repeat n): KCIDB keeps each execution of a test as its own test object under
 * the test's path, so a repetition's tests have the scenario's path (not `<scenario>#<k>`'s), an
 * id that ends in `#<k>`, and misc.repetition; a dashboard sees the repetitions side by side.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { runViews } from "../backend/registry.ts";
import {
  deviceOf,
  hasSeries,
  kernelBase,
  type RunDir,
  repetitionOf,
  scenariosOf,
  stageChecks,
} from "../rundir/read.ts";
import type { RunSeries } from "../rundir/schema.ts";
import type { Verdict } from "../verdict.ts";
import { checkoutFacts } from "./kcidb-checkout.ts";
import { type KcidbIncident, type KcidbIssue, KcidbIssues } from "./kcidb-issues.ts";

export const KCIDB_ORIGIN = "erdma_hil";
export const KCIDB_VERSION = { major: 5, minor: 0 } as const;
const EXCERPT_MAX = 16384;

type KStatus = "FAIL" | "ERROR" | "MISS" | "PASS" | "DONE" | "SKIP";
interface Resource {
  name: string;
  url: string;
}

export interface KcidbTest {
  id: string;
  build_id: string;
  origin: string;
  path: string;
  status: KStatus;
  comment?: string;
  log_url?: string;
  log_excerpt?: string;
  duration?: number;
  start_time?: string;
  environment?: { comment?: string; misc?: Record<string, unknown> };
  output_files?: Resource[];
  misc?: Record<string, unknown>;
}

export interface KcidbReport {
  version: { major: 5; minor: 0 };
  checkouts: Array<Record<string, unknown>>;
  builds: Array<Record<string, unknown>>;
  tests: KcidbTest[];
  issues?: KcidbIssue[];
  incidents?: KcidbIncident[];
}

export interface KcidbOptions {
  /**
   * Where the run directory is published (http(s) URL of its folder): log_url, output_files and
   * patchset_files point below it. Default: file:// URLs of the run directory.
   */
  urlBase?: string;
}

/** The patch series of the run: recorded in verdicts.json, or the .patch files of <run>/series/. */
export interface Patchset {
  hash: string;
  files: Resource[];
}

function sha256(text: string | Buffer): string {
  return createHash("sha256").update(text).digest("hex");
}

/** KCIDB's patchset hash: sha256 over the newline-terminated sha256 of each patch, in order. */
export function patchsetHash(patchHashes: readonly string[]): string {
  if (patchHashes.length === 0) return "";
  return sha256(patchHashes.map((h) => `${h}\n`).join(""));
}

function urlFor(run: RunDir, rel: string, opts: KcidbOptions): string {
  if (opts.urlBase)
    return `${opts.urlBase.replace(/\/+$/, "")}/${rel.split("/").map(encodeURIComponent).join("/")}`;
  return pathToFileURL(join(run.dir, rel)).href;
}

async function seriesFiles(run: RunDir): Promise<string[]> {
  const names = await readdir(join(run.dir, "series")).catch(() => [] as string[]);
  return names.filter((n) => n.endsWith(".patch")).sort();
}

/**
 * The patchset of the run, or undefined when the kernel had a series the run directory does not
 * carry (then patchset_hash is left out rather than claimed empty).
 */
export async function patchsetOf(run: RunDir, opts: KcidbOptions = {}): Promise<Patchset | undefined> {
  const recorded: RunSeries | undefined = run.record.series;
  if (recorded) {
    return {
      hash: patchsetHash(recorded.patches.map((p) => p.sha256)),
      files: recorded.patches.map((p) => ({
        name: basename(p.name),
        url: urlFor(run, `series/${basename(p.name)}`, opts),
      })),
    };
  }
  const files = await seriesFiles(run);
  if (files.length > 0) {
    const hashes = await Promise.all(
      files.map(async (f) => sha256(await readFile(join(run.dir, "series", f)))),
    );
    return {
      hash: patchsetHash(hashes),
      files: files.map((f) => ({ name: f, url: urlFor(run, `series/${f}`, opts) })),
    };
  }
  if (hasSeries(run)) return undefined;
  return { hash: "", files: [] };
}

/** A path component: KCIDB's test path is dot-separated [a-zA-Z0-9_-]+ parts. */
function part(text: string): string {
  return text.replace(/[^a-zA-Z0-9_-]/g, "_") || "_";
}

function status(v: Verdict): { status: KStatus } {
  if (v === "XFAIL") return { status: "FAIL" };
  if (v === "XPASS") return { status: "PASS" };
  return { status: v };
}

/** Text as KCIDB takes it: no NUL characters. */
function text(s: string): string {
  return s.replace(/\0/g, "");
}

function excerpt(lines: readonly string[]): string | undefined {
  if (lines.length === 0) return undefined;
  const all = text(lines.join("\n"));
  return all.length <= EXCERPT_MAX ? all : `${all.slice(0, EXCERPT_MAX - 20)}\n[... truncated]`;
}

function comment(v: Verdict, reason: string): string {
  if (v === "XFAIL") return text(`XFAIL (expected: see its incident): ${reason}`);
  if (v === "XPASS") return text(`XPASS (the expected failure was not seen): ${reason}`);
  return text(reason);
}

/** A rule that held or had nothing to judge is summed up in its scenario's test, not a test of its own. */
function isQuiet(v: Verdict): boolean {
  return v === "PASS" || v === "SKIP";
}

export async function renderKcidb(run: RunDir, opts: KcidbOptions = {}): Promise<KcidbReport> {
  const r = run.record;
  const patchset = await patchsetOf(run, opts);
  const commit = r.versions?.kernel?.git?.commit;
  const checkoutKey = sha256(
    JSON.stringify([kernelBase(run), patchset?.hash ?? r.kernel, ...(commit ? [commit] : [])]),
  );
  const checkoutId = `${KCIDB_ORIGIN}:checkout-${checkoutKey.slice(0, 24)}`;
  const buildId = `${KCIDB_ORIGIN}:build-${sha256(JSON.stringify([checkoutKey, r.kernel, r.release ?? ""])).slice(0, 24)}`;
  const runKey = sha256(JSON.stringify(r)).slice(0, 16);
  const finished = run.finishedAt.getTime();
  const startTime = r.startedAt ?? new Date(finished - (r.wallMs ?? 0)).toISOString();
  const device = deviceOf(run);
  const views = device && runViews(device);
  const deviceText = device && views ? `, ${views.environment(device)}` : "";
  const [deviceKey, deviceValue] = device && views ? views.property(device) : [];
  const environment = {
    comment: `QEMU guest, ${r.driver ?? "erdma"} driver${deviceText}, ${r.executor ?? "kernel"} executor`,
    misc: {
      ...(r.driver ? { driver: r.driver } : {}),
      ...(r.executor ? { executor: r.executor } : {}),
      ...(deviceKey !== undefined ? { [`device_${deviceKey}`]: deviceValue } : {}),
    },
  };
  const facts = await checkoutFacts(run);
  const checkoutMisc = {
    ...facts.misc,
    ...(patchset ? {} : { note: "built with a patch series the run directory does not record" }),
  };
  const checkout: Record<string, unknown> = {
    id: checkoutId,
    origin: KCIDB_ORIGIN,
    tree_name: kernelBase(run),
    ...facts.fields,
    comment: r.kernel,
    valid: true,
    ...(patchset ? { patchset_hash: patchset.hash } : {}),
    ...(patchset && patchset.files.length > 0 ? { patchset_files: patchset.files } : {}),
    ...(Object.keys(checkoutMisc).length > 0 ? { misc: checkoutMisc } : {}),
  };
  const build: Record<string, unknown> = {
    id: buildId,
    checkout_id: checkoutId,
    origin: KCIDB_ORIGIN,
    architecture: "x86_64",
    config_name: r.kernel,
    ...(r.release ? { comment: `Linux ${r.release}` } : {}),
    status: "PASS",
  };
  const tests: KcidbTest[] = [];
  const expected = new KcidbIssues(KCIDB_ORIGIN);
  const base = { build_id: buildId, origin: KCIDB_ORIGIN, start_time: startTime, environment };
  const id = (path: string) => `${KCIDB_ORIGIN}:${runKey}:${path}`;
  /** the harness's verdict, where the KCIDB status does not say it */
  const verdictWord = (v: Verdict, s: KStatus) => (v === s ? {} : { hil_verdict: v });
  const stage = stageChecks(run);
  for (const c of stage) {
    const broke = c.id === "suite" && c.verdict === "ERROR";
    // the suite itself could not run: a harness failure, KCIDB's MISS
    const path = broke ? KCIDB_ORIGIN : `${KCIDB_ORIGIN}.${r.probe ? "probe" : "stage"}.${part(c.id)}`;
    const s = broke ? { status: "MISS" as const } : status(c.verdict);
    const log = isQuiet(c.verdict) ? undefined : excerpt([c.reason, ...(c.evidence ?? [])]);
    tests.push({
      ...base,
      id: id(path),
      path,
      ...s,
      comment: comment(c.verdict, `${c.title}: ${c.reason}`),
      ...(log ? { log_excerpt: log } : {}),
      ...(r.probe && !isQuiet(c.verdict) ? { log_url: urlFor(run, "console.log", opts) } : {}),
      misc: { ...verdictWord(c.verdict, s.status), check: c.id },
    });
  }
  for (const s of scenariosOf(run)) {
    const rep = repetitionOf(s);
    const runId = (path: string) =>
      rep.repetition === undefined ? id(path) : `${id(path)}#${rep.repetition}`;
    const files: Resource[] = [
      ...(s.trace ? [{ name: basename(s.trace), url: urlFor(run, s.trace, opts) }] : []),
      ...(s.hwTrace ? [{ name: basename(s.hwTrace), url: urlFor(run, s.hwTrace, opts) }] : []),
    ];
    const duration = (s.durationMs ?? 0) / 1000;
    for (const j of s.judgements) {
      const path = `${KCIDB_ORIGIN}.${part(rep.scenario)}.${part(j.profile)}`;
      const quiet = isQuiet(j.verdict) && !s.outcome;
      const worst = j.rules.find((x) => x.verdict === j.verdict && x.verdict !== "PASS");
      const reason = s.outcome?.reason ?? (worst ? `rule ${worst.rule}: ${worst.reason}` : undefined);
      const st = status(j.verdict);
      const profileId = runId(path);
      tests.push({
        ...base,
        id: profileId,
        path,
        ...st,
        ...(reason ? { comment: comment(j.verdict, reason) } : {}),
        duration,
        ...(s.trace ? { log_url: urlFor(run, s.trace, opts) } : {}),
        ...(!quiet && files.length > 0 ? { output_files: files } : {}),
        misc: {
          ...verdictWord(j.verdict, st.status),
          scenario: rep.scenario,
          ...(rep.repetition === undefined ? {} : { repetition: rep.repetition }),
          oracle_profile: j.profile,
          ...(!quiet && s.file ? { file: s.file } : {}),
        },
      });
      for (const rule of j.rules) {
        if (isQuiet(rule.verdict)) continue;
        const rpath = `${path}.rule_${part(rule.rule)}`;
        const rlog = excerpt(rule.evidence ?? []);
        const rs = status(rule.verdict);
        const ruleId = runId(rpath);
        if (rule.verdict === "XFAIL" || rule.verdict === "XPASS") {
          const issue = expected.issueOf(rep.scenario, rule);
          expected.incident(ruleId, issue, rule.verdict === "XFAIL");
          if (j.verdict === rule.verdict) expected.incident(profileId, issue, rule.verdict === "XFAIL");
        }
        tests.push({
          ...base,
          id: ruleId,
          path: rpath,
          ...rs,
          comment: comment(rule.verdict, `${rule.title}: ${rule.reason}`),
          ...(rlog ? { log_excerpt: rlog } : {}),
          misc: {
            ...verdictWord(rule.verdict, rs.status),
            rule: rule.rule,
            ...(rule.citation ? { citation: rule.citation } : {}),
            ...(rule.knownBug ? { known_bug: rule.knownBug } : {}),
            ...(rule.problems?.some((p) => p.wrs?.length)
              ? { wrs: rule.problems.flatMap((p) => p.wrs ?? []) }
              : {}),
          },
        });
      }
    }
  }
  return {
    version: { ...KCIDB_VERSION },
    checkouts: [checkout],
    builds: [build],
    tests,
    ...(expected.issues.length > 0 ? { issues: expected.issues, incidents: expected.incidents } : {}),
  };
}
