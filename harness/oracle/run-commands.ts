/**
 * The commands rule: every command line the executor was sent shows in its trace, in order, with a
 * result, and no command failed where the scenario did not say it may. A command that failed
 * unexpectedly (a modify, a connect, a poll whose min was not reached), a trace that is empty or
 * stops short without a stuck step, or a trace whose commands are not the ones sent is an ERROR:
 * the run did not do what the scenario meant, so no rule behind it can be trusted to have been
 * exercised. Posts and drains are judged by rules 1-3 and 9, not here, unless the step says what
 * they must return; the settling polls are rule 5's business.
 */

import type { TraceRecordOf } from "../protocol/trace.ts";
import type { ExpectedRc, StepKind } from "../scenario/schema.ts";
import type { SentCommand } from "../scenario/sent-command.ts";

export type { ExpectedRc };

import type { TraceModel } from "./model.ts";
import type { Rule, RuleResult } from "./rule.ts";

/** Step kinds whose failures the rules judge (their return codes are what rules 1-3 and 9 look at). */
const JUDGED_BY_RULES: ReadonlySet<StepKind> = new Set(["post_send", "post_recv", "drain"]);

function where(c: SentCommand): string {
  return c.phase === "step" ? `step ${(c.step ?? 0) + 1} (line ${c.stepLine ?? "?"})` : c.phase;
}

function rcText(done: TraceRecordOf<"done">): string {
  return `${done.rc}${done.err ? ` (${done.err})` : ""}`;
}

export function rcAllowed(rc: number, expect: ExpectedRc): boolean {
  if (expect === "any") return true;
  if (expect === "error") return rc !== 0;
  return rc === expect;
}

function refusedBefore(model: TraceModel, done: TraceRecordOf<"done">): boolean {
  const at = model.records.indexOf(done);
  return model.calls.some((c) => c.rc !== 0 && c.at < at);
}

function owesMissing(model: TraceModel): boolean {
  return model.wrs.some((w) => w.completions.length === 0 && model.deadline(w) !== undefined);
}

function error(reason: string, evidence: string[], judged: number): RuleResult {
  return { verdict: "ERROR", reason, evidence, judged, applies: true };
}

export const commandsRule: Rule = {
  id: "commands",
  title: "every command the scenario sent ran and returned what the scenario allows",
  citation:
    "README, What is judged: a step whose command failed where the scenario did not allow it is an ERROR, not a silent SKIP of the rules behind it",
  judge({ model, observations, commands }) {
    if (!commands) return { verdict: "SKIP", reason: "no command list given", judged: 0, applies: false };
    const cmds = model.records.flatMap((r) => (r.ev === "cmd" ? [r] : []));
    const dones = new Map(model.records.flatMap((r) => (r.ev === "done" ? [[r.id, r] as const] : [])));
    const stuck = observations.some((o) => o.ev === "stuck") || model.records.some((r) => r.ev === "hang");
    if (commands.length > 0 && cmds.length === 0)
      return error(
        `the executor's trace is empty: none of the ${commands.length} command(s) sent shows in it`,
        [`first command: ${commands[0]?.line}`],
        0,
      );
    const problems: string[] = [];
    cmds.forEach((cmd, i) => {
      const sent = commands[i];
      if (!sent) {
        problems.push(`the trace shows a command that was not sent: #${i + 1} ${cmd.line}`);
        return;
      }
      if (cmd.line !== sent.line) {
        problems.push(
          `command #${i + 1} in the trace is "${cmd.line}"; the executor was sent "${sent.line}"`,
        );
        return;
      }
      const done = dones.get(cmd.id);
      if (!done) {
        if (!stuck || i !== cmds.length - 1)
          problems.push(`${where(sent)}: "${sent.line}" started and never finished`);
        return;
      }
      if (sent.expect !== undefined) {
        if (!rcAllowed(done.rc, sent.expect))
          problems.push(
            `${where(sent)}: "${sent.line}" returned ${rcText(done)}; the scenario expects ${sent.expect === "error" ? "an error" : sent.expect}`,
          );
        return;
      }
      // a settle's poll may come up short; a barrier that fails is the console rule's (console-cut)
      if (done.rc === 0 || sent.phase === "settle" || sent.phase === "barrier") return;
      if (sent.phase === "step" && sent.kind && JUDGED_BY_RULES.has(sent.kind)) return;
      // completions a poll waited for that a post call refused, or that a QP in ERROR owes and never
      // delivered: rules 1-3 and 5 judge those, the poll's shortfall is their consequence
      if (sent.kind === "poll" && (refusedBefore(model, done) || owesMissing(model))) return;
      problems.push(`${where(sent)}: "${sent.line}" failed: rc ${rcText(done)}`);
    });
    if (cmds.length < commands.length && !stuck) {
      const next = commands[cmds.length] as SentCommand;
      problems.push(
        `the trace stops after ${cmds.length} of ${commands.length} command(s): ${where(next)} "${next.line}" never ran`,
      );
    }
    if (problems.length > 0)
      return error(
        `${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ""}`,
        problems.slice(0, 12),
        cmds.length,
      );
    return {
      verdict: "PASS",
      reason: `${cmds.length} command(s) ran as sent${stuck ? " until the stuck one" : ""}; none failed unexpectedly`,
      judged: cmds.length,
      applies: true,
    };
  },
};
