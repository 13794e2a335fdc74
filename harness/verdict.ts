/**
 * Verdict words as KCIDB uses them (PASS, FAIL, ERROR, MISS, SKIP), plus two for known bugs a
 * scenario file records: XFAIL (the recorded rule failed as expected) and XPASS (it held though
 * the bug is recorded: shown, not a failure; the record may be stale or the bug fixed).
 */
export const VERDICTS = ["PASS", "FAIL", "ERROR", "MISS", "SKIP", "XFAIL", "XPASS"] as const;
export type Verdict = (typeof VERDICTS)[number];

export type ExpectedBy = "injected fault" | "known bug";

export type CheckResult = {
  id: string;
  title: string;
  verdict: Verdict;
  /** one line saying why */
  reason: string;
  /** quoted evidence: output lines, console lines */
  evidence?: string[];
  /** an XFAIL's or XPASS's cause: the scenario's own injected fault, or a recorded driver bug */
  expectedBy?: ExpectedBy;
  /** a scenario under an oracle profile: how many events of the run each covered rule judged */
  exercised?: { rule: string; judged: number }[];
};

/**
 * Exit codes of `hil run`: 0 every verdict PASS, SKIP, XFAIL or XPASS; 1 a check or rule FAILed
 * (or, with strict, a known bug's rule held: XPASS, the record is stale); 3 the harness could not
 * judge (ERROR or MISS), which wins over 1; 2 is bad input (the CLI's).
 */
export const EXIT_ALL_PASS = 0;
export const EXIT_FAILED = 1;
export const EXIT_NOT_JUDGED = 3;

/** Verdicts that do not fail a run. */
export const PASSING_VERDICTS: readonly Verdict[] = ["PASS", "SKIP", "XFAIL", "XPASS"];

export function exitCodeFor(results: readonly CheckResult[], opts: { strict?: boolean } = {}): number {
  if (results.some((r) => r.verdict === "ERROR" || r.verdict === "MISS")) return EXIT_NOT_JUDGED;
  if (results.some((r) => r.verdict === "FAIL" || (opts.strict && r.verdict === "XPASS"))) return EXIT_FAILED;
  return EXIT_ALL_PASS;
}
