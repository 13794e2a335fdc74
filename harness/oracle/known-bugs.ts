/**
 * What a scenario file says to expect, applied to the oracle's judgements, problem by problem.
 *
 * First the injected faults (expect_fail): a rule they must break is an XFAIL when one of its
 * problems names a WR a fault hit (or, for a fault on no WR, when it fails at all); a rule that
 * holds, or fails only on WRs no fault hit, is a FAIL: the oracle missed the fault, or something
 * else broke. Then the known driver bugs (known_bugs): a failing rule is an XFAIL only when every
 * one of its problems matches the `failure` pattern of a record that applies; a problem no record
 * describes keeps the rule a FAIL. A recorded rule that holds is an XPASS (`--strict` fails it, so
 * a stale record is found the night the bug is fixed).
 */

import type { WrRef } from "../protocol/observations.ts";
import type { DriverName, ExecutorKind, ExpectFail, KnownBug } from "../scenario/schema.ts";
import { combineVerdicts, type ProfileJudgement, type RuleVerdict } from "./judge.ts";
import type { RuleId } from "./rule.ts";

/** What a run is: the known bugs that apply are chosen by it. */
export interface BugTarget {
  driver: DriverName;
  executor: ExecutorKind;
  /** the erdma device profile (driver erdma) */
  deviceProfile?: string;
  /** the kernel under test: its base (debian:6.12, or a path) and version (6.12.95) */
  kernel?: { base: string; version?: string };
}

function kernelMatches(entries: readonly string[] | undefined, kernel: BugTarget["kernel"]): boolean {
  if (!entries) return true;
  if (!kernel) return false;
  return entries.some(
    (e) =>
      e === kernel.base ||
      (kernel.version !== undefined && (kernel.version === e || kernel.version.startsWith(`${e}.`))),
  );
}

/** The known bugs that apply to this run. */
export function knownBugsFor(bugs: readonly KnownBug[] | undefined, target: BugTarget): KnownBug[] {
  return (bugs ?? []).filter(
    (b) =>
      b.driver === target.driver &&
      (!b.executors || b.executors.includes(target.executor)) &&
      (!b.device_profiles ||
        (target.deviceProfile !== undefined && b.device_profiles.includes(target.deviceProfile))) &&
      kernelMatches(b.kernels, target.kernel),
  );
}

export function ruleIdOf(ref: KnownBug["rules"][number]): RuleId {
  return String(ref) as RuleId;
}

function recombine(j: ProfileJudgement, rules: RuleVerdict[]): ProfileJudgement {
  return { ...j, rules, verdict: combineVerdicts(rules.map((r) => r.verdict)) };
}

/** The problems of a FAIL (a FAIL made without them counts as one problem: its reason). */
function problemsOf(r: RuleVerdict): { reason: string; wrs?: WrRef[] }[] {
  return r.problems && r.problems.length > 0 ? r.problems : [{ reason: r.reason }];
}

function namesAny(p: { wrs?: WrRef[] }, targets: readonly WrRef[]): boolean {
  return (p.wrs ?? []).some((w) =>
    targets.some((t) => t.qp === w.qp && t.queue === w.queue && t.wrId === w.wrId),
  );
}

/**
 * The rules the scenario's injected faults must break. `targets` are the WRs the faults hit
 * (empty when they hit no WR: a lost interrupt, a stalled queue).
 */
export function applyExpectedFailures(
  judgements: readonly ProfileJudgement[],
  expected: ExpectFail | undefined,
  targets: readonly WrRef[] = [],
): ProfileJudgement[] {
  if (!expected) return [...judgements];
  const named = new Set(expected.rules.map((x) => ruleIdOf(x)));
  const where = targets.map((t) => `${t.qp} ${t.queue} WR ${t.wrId}`).join(", ");
  return judgements.map((j) =>
    recombine(
      j,
      j.rules.map((r): RuleVerdict => {
        if (!named.has(r.rule)) return r;
        if (r.verdict === "PASS")
          return {
            ...r,
            verdict: "FAIL",
            reason: `the injected fault should break this rule (${expected.why}), but it holds: ${r.reason}`,
          };
        if (r.verdict !== "FAIL") return r;
        if (targets.length === 0 || problemsOf(r).some((p) => namesAny(p, targets)))
          return {
            ...r,
            verdict: "XFAIL",
            reason: `injected fault (${expected.why}): ${r.reason}`,
            injectedFault: true,
          };
        return {
          ...r,
          reason: `the rule broke, but on no WR the injected fault hit (${where}): ${r.reason}`,
        };
      }),
    ),
  );
}

function describes(bug: KnownBug, reason: string): boolean {
  return new RegExp(bug.failure).test(reason);
}

function markerOf(bug: KnownBug): NonNullable<RuleVerdict["knownBug"]> {
  return { reference: bug.reference, note: bug.note, ...(bug.id ? { id: bug.id } : {}) };
}

function markKnown(r: RuleVerdict, bugs: readonly KnownBug[]): RuleVerdict {
  const recorded = bugs.filter((b) => b.rules.some((x) => ruleIdOf(x) === r.rule));
  if (recorded.length === 0) return r;
  const first = recorded[0] as KnownBug;
  const knownBug = markerOf(first);
  if (r.verdict === "PASS" && recorded.every((b) => b.implied)) return r;
  if (r.verdict === "PASS")
    return {
      ...r,
      verdict: "XPASS",
      reason: `holds though a known bug is recorded (${first.reference}): ${r.reason}`,
      knownBug,
    };
  // a step's unexpected return is the commands rule's ERROR; a record may describe it as the driver's
  if (r.verdict !== "FAIL" && !(r.verdict === "ERROR" && r.rule === "commands")) return r;
  const problems = problemsOf(r);
  const unknown = problems.find((p) => !recorded.some((b) => describes(b, p.reason)));
  if (unknown)
    return {
      ...r,
      reason: `${unknown.reason} (a failure the known-bug record${recorded.length > 1 ? "s" : ""} of rule ${r.rule} do${recorded.length > 1 ? "" : "es"} not describe)`,
    };
  const bug = recorded.find((b) => describes(b, problems[0]?.reason ?? "")) ?? first;
  return {
    ...r,
    verdict: "XFAIL",
    reason: `known bug (${bug.reference}): ${r.reason}`,
    knownBug: markerOf(bug),
  };
}

/** A covered rule the bug keeps from being exercised (MISS) is a SKIP that names the record. */
function markHidden(r: RuleVerdict, bugs: readonly KnownBug[]): RuleVerdict {
  if (r.verdict !== "MISS") return r;
  const bug = bugs.find((b) => b.hides?.some((x) => ruleIdOf(x) === r.rule));
  if (!bug) return r;
  return {
    ...r,
    verdict: "SKIP",
    reason: `${r.reason}: a known bug keeps it from being exercised here (${bug.reference})`,
    knownBug: markerOf(bug),
  };
}

/**
 * The judgements with the recorded bugs' rules marked XFAIL/XPASS (under the oracle profiles each
 * record names), the rules they hide SKIP (under every profile), each profile's verdict recombined.
 */
export function applyKnownBugs(
  judgements: readonly ProfileJudgement[],
  bugs: readonly KnownBug[],
): ProfileJudgement[] {
  if (bugs.length === 0) return [...judgements];
  return judgements.map((j) =>
    recombine(
      j,
      j.rules.map((r) =>
        markHidden(
          markKnown(
            r,
            bugs.filter((b) => !b.oracle_profiles || b.oracle_profiles.includes(j.profile)),
          ),
          bugs,
        ),
      ),
    ),
  );
}
