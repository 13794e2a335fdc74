/**
 * What a patch series changed: the verdicts of the suite on the base and on base+series, compared
 * per scenario and oracle profile (and per check of the device probes stage). A new FAIL is a
 * regression; a FAIL that is gone is fixed; an ERROR or MISS on the patched side where the base
 * was judged means the two cannot be compared there.
 */

import type { RunRecord } from "../rundir/schema.ts";
import { PASSING_VERDICTS, type Verdict } from "../verdict.ts";
import { ruleEntriesOf, topLevelEntries } from "./verdict-list.ts";

export type Change =
  /** FAIL with the series, not without (XFAIL -> FAIL too: a FAIL no known bug accounts for) */
  | "new-fail"
  /** FAIL without the series, not with it */
  | "fixed"
  /** ERROR or MISS with the series where the base was judged */
  | "not-judged"
  /** the same verdict */
  | "unchanged"
  /** any other difference (PASS -> SKIP, XFAIL -> XPASS, a scenario only one side ran) */
  | "changed";

export interface RuleDelta {
  rule: string;
  base?: Verdict;
  patched?: Verdict;
  reason: string;
}

export interface VerdictDelta {
  /** "<scenario>[<profile>]" or a check's id */
  key: string;
  scenario?: string;
  profile?: string;
  base?: Verdict;
  patched?: Verdict;
  change: Change;
  /** the patched side's reason (the base's when the patched side has none) */
  reason: string;
  /** the rules whose verdicts differ */
  rules: RuleDelta[];
}

export interface ValidateDiff {
  deltas: VerdictDelta[];
  counts: Record<Change, number>;
  regression: boolean;
}

const UNJUDGED: readonly Verdict[] = ["ERROR", "MISS"];

export function classify(base: Verdict | undefined, patched: Verdict | undefined): Change {
  if (base === patched) return "unchanged";
  if (patched === "FAIL") return "new-fail";
  if (base === "FAIL" && patched !== undefined && PASSING_VERDICTS.includes(patched)) return "fixed";
  if (patched !== undefined && UNJUDGED.includes(patched) && base !== undefined && !UNJUDGED.includes(base))
    return "not-judged";
  if (patched === undefined && base !== undefined && !UNJUDGED.includes(base) && base !== "SKIP")
    return "not-judged";
  return "changed";
}

/** Compares two runs' verdicts; keys in the base's order, then those only the patched run has. */
export function diffVerdicts(base: RunRecord, patched: RunRecord): ValidateDiff {
  const a = topLevelEntries(base);
  const b = topLevelEntries(patched);
  const keys = [...a.keys(), ...[...b.keys()].filter((k) => !a.has(k))];
  const deltas = keys.map((key): VerdictDelta => {
    const x = a.get(key);
    const y = b.get(key);
    const change = classify(x?.verdict, y?.verdict);
    const ra = ruleEntriesOf(base, key);
    const rb = ruleEntriesOf(patched, key);
    const rules: RuleDelta[] = [];
    for (const rule of [...ra.keys(), ...[...rb.keys()].filter((r) => !ra.has(r))]) {
      const ba = ra.get(rule);
      const pb = rb.get(rule);
      if (ba?.verdict === pb?.verdict) continue;
      rules.push({
        rule,
        ...(ba ? { base: ba.verdict } : {}),
        ...(pb ? { patched: pb.verdict } : {}),
        reason: pb?.reason ?? ba?.reason ?? "",
      });
    }
    const entry = y ?? x;
    return {
      key,
      ...(entry?.scenario ? { scenario: entry.scenario, profile: entry.profile } : {}),
      ...(x ? { base: x.verdict } : {}),
      ...(y ? { patched: y.verdict } : {}),
      change,
      reason: y?.reason ?? x?.reason ?? "",
      rules,
    };
  });
  const counts: Record<Change, number> = {
    "new-fail": 0,
    fixed: 0,
    "not-judged": 0,
    unchanged: 0,
    changed: 0,
  };
  for (const d of deltas) counts[d.change]++;
  return { deltas, counts, regression: counts["new-fail"] > 0 };
}

const WORDS: Record<Change, string> = {
  "new-fail": "NEW FAIL",
  fixed: "FIXED",
  "not-judged": "NOT JUDGED",
  unchanged: "unchanged",
  changed: "changed",
};

/** The table: changed rows first (new FAILs, fixed, not judged, changed), then the unchanged ones. */
export function renderDiff(diff: ValidateDiff, opts: { showUnchanged?: boolean } = {}): string {
  const order: Change[] = ["new-fail", "fixed", "not-judged", "changed", "unchanged"];
  const rows = order.flatMap((c) =>
    diff.deltas.filter((d) => d.change === c && (c !== "unchanged" || opts.showUnchanged !== false)),
  );
  if (rows.length === 0) return "no verdicts to compare\n";
  const name = (d: VerdictDelta) => d.scenario ?? d.key;
  const w = Math.max(8, ...rows.map((d) => name(d).length));
  const pw = Math.max(7, ...rows.map((d) => (d.profile ?? "").length));
  const lines = [
    `${"scenario".padEnd(w)}  ${"profile".padEnd(pw)}  ${"base".padEnd(5)}  ${"patched".padEnd(7)}  ${"change".padEnd(10)}  reason`,
  ];
  for (const d of rows) {
    lines.push(
      `${name(d).padEnd(w)}  ${(d.profile ?? "").padEnd(pw)}  ${(d.base ?? "-").padEnd(5)}  ${(d.patched ?? "-").padEnd(7)}  ${WORDS[d.change].padEnd(10)}  ${d.change === "unchanged" ? "" : d.reason}`.trimEnd(),
    );
    if (d.change !== "unchanged")
      for (const r of d.rules)
        lines.push(
          `${"".padEnd(w + pw + 4)}rule ${r.rule}: ${r.base ?? "-"} -> ${r.patched ?? "-"}  ${r.reason}`,
        );
  }
  return `${lines.join("\n")}\n`;
}

export function diffSummary(diff: ValidateDiff): string {
  const c = diff.counts;
  const verdict = diff.regression ? "REGRESSION" : c["not-judged"] > 0 ? "NOT JUDGED" : "no regression";
  const parts = [`${c["new-fail"]} new FAIL`, `${c.fixed} fixed`, `${c["not-judged"]} not judged`];
  if (c.changed > 0) parts.push(`${c.changed} changed`);
  parts.push(`${c.unchanged} unchanged`);
  return `${verdict}: ${parts.join(", ")}`;
}
