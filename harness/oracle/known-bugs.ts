/**
 * Known driver bugs recorded in scenario files (known_bugs): which apply to a run (driver, kernel,
 * device profile, executor), and what they do to its judgements. A recorded rule that FAILs is an
 * XFAIL, one that PASSes is an XPASS; a rule FAIL the record does not name stays a FAIL, and so
 * the profile's verdict (recombined by combineVerdicts) too.
 */
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

function mark(r: RuleVerdict, bug: KnownBug): RuleVerdict {
  const knownBug = { reference: bug.reference, note: bug.note };
  if (r.verdict === "FAIL")
    return { ...r, verdict: "XFAIL", reason: `known bug (${bug.reference}): ${r.reason}`, knownBug };
  if (r.verdict === "PASS")
    return {
      ...r,
      verdict: "XPASS",
      reason: `holds though a known bug is recorded (${bug.reference}): ${r.reason}`,
      knownBug,
    };
  return r;
}

/** The judgements with the bugs' rules marked XFAIL/XPASS and each profile's verdict recombined. */
export function applyKnownBugs(
  judgements: readonly ProfileJudgement[],
  bugs: readonly KnownBug[],
): ProfileJudgement[] {
  if (bugs.length === 0) return [...judgements];
  return judgements.map((j) => {
    const rules = j.rules.map((r) => {
      const bug = bugs.find(
        (b) =>
          (!b.oracle_profiles || b.oracle_profiles.includes(j.profile)) &&
          b.rules.some((x) => ruleIdOf(x) === r.rule),
      );
      return bug ? mark(r, bug) : r;
    });
    return { ...j, rules, verdict: combineVerdicts(rules.map((r) => r.verdict)) };
  });
}

/**
 * The rules the scenario's injected faults must break: a FAIL of one is an XFAIL (the oracle caught
 * the faulty device); one that holds is a FAIL (it did not).
 */
export function applyExpectedFailures(
  judgements: readonly ProfileJudgement[],
  expected: ExpectFail | undefined,
): ProfileJudgement[] {
  if (!expected) return [...judgements];
  return judgements.map((j) => {
    const rules = j.rules.map((r): RuleVerdict => {
      if (!expected.rules.some((x) => ruleIdOf(x) === r.rule)) return r;
      if (r.verdict === "FAIL")
        return { ...r, verdict: "XFAIL", reason: `expected (${expected.why}): ${r.reason}` };
      if (r.verdict === "PASS")
        return {
          ...r,
          verdict: "FAIL",
          reason: `the injected fault should break this rule (${expected.why}), but it holds: ${r.reason}`,
        };
      return r;
    });
    return { ...j, rules, verdict: combineVerdicts(rules.map((r) => r.verdict)) };
  });
}
