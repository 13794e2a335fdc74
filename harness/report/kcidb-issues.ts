/**
 * KCIDB v5.0 says "this failure is expected" with an issue and an incident, not with a flag
 * (kcidb-io c8f1122 replaced the test's `waived` by them): an issue per known driver bug record
 * (culprit: the tested code; report_url its reference when that is a URL) and one per scenario
 * whose injected device fault is expected to break rules (culprit: the harness, which injected
 * it). An XFAIL test gets an incident of its issue that is present; an XPASS test one that is not
 * (the issue was looked for and not seen).
 */
import { createHash } from "node:crypto";
import type { RunRule } from "../rundir/schema.ts";

export interface KcidbIssue {
  id: string;
  version: number;
  origin: string;
  report_url?: string;
  report_subject?: string;
  culprit: { code?: boolean; harness?: boolean };
  comment?: string;
  misc?: Record<string, unknown>;
}

export interface KcidbIncident {
  id: string;
  origin: string;
  issue_id: string;
  issue_version: number;
  test_id: string;
  present: boolean;
  comment?: string;
}

/** Issues are written once and not revised by later runs: version 1. */
const ISSUE_VERSION = 1;

function short(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** The issues of a report and the incidents that tie its tests to them. */
export class KcidbIssues {
  readonly #issues = new Map<string, KcidbIssue>();
  readonly incidents: KcidbIncident[] = [];

  constructor(private readonly origin: string) {}

  get issues(): KcidbIssue[] {
    return [...this.#issues.values()];
  }

  /** The issue an XFAIL or XPASS rule is about: its known-bug record, or its scenario's injected fault. */
  issueOf(scenario: string, rule: RunRule): KcidbIssue {
    const bug = rule.knownBug;
    const issue: KcidbIssue = bug
      ? {
          id: `${this.origin}:known-bug-${short(bug.reference)}`,
          version: ISSUE_VERSION,
          origin: this.origin,
          ...(/^https?:\/\//.test(bug.reference) ? { report_url: bug.reference } : {}),
          report_subject: `known bug: ${bug.reference}`,
          culprit: { code: true },
          ...(bug.note ? { comment: bug.note } : {}),
          misc: { reference: bug.reference },
        }
      : {
          id: `${this.origin}:expected-fault-${short(scenario)}`,
          version: ISSUE_VERSION,
          origin: this.origin,
          report_subject: `the device fault scenario ${scenario} injects breaks the rules it expects to`,
          culprit: { harness: true },
          misc: { scenario },
        };
    const known = this.#issues.get(issue.id);
    if (known) return known;
    this.#issues.set(issue.id, issue);
    return issue;
  }

  /** Ties a test to an issue: present for an XFAIL, absent for an XPASS. */
  incident(testId: string, issue: KcidbIssue, present: boolean): void {
    const id = `${testId}:${issue.id.slice(this.origin.length + 1)}`;
    if (this.incidents.some((i) => i.id === id)) return;
    this.incidents.push({
      id,
      origin: this.origin,
      issue_id: issue.id,
      issue_version: issue.version,
      test_id: testId,
      present,
    });
  }
}
