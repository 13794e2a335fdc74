/**
 * Rule 4: the completions of one work queue come back in the order its WRs were posted (an
 * unsignaled WR that completed without a completion leaves a gap, never a swap).
 */
import { type Completion, completionsOfPostedWrs, cqeRefs, quote, ref, type Wr, wrName } from "../model.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

export const rule4: Rule = {
  id: "4",
  title: "completions on each work queue come back in posting order",
  citation:
    "IBTA Vol 1 ch. 10.8 (RC work queues: WQEs complete in the order posted); Linux verbs.c __ib_drain_sq/__ib_drain_rq rely on it (the marker completes last)",
  judge({ model }) {
    const known = completionsOfPostedWrs(model);
    if (known.length === 0) return skip("no completions of posted WRs");
    const lastSeq = new Map<string, { seq: number; at: number; wr: Wr; c: Completion }>();
    const problems: Problem[] = [];
    let compared = 0;
    for (const c of known) {
      const w = c.wr;
      if (w.completions[0] !== c) continue; // repeats are rule 5's business
      const key = `${w.qp}/${w.queue}`;
      const prev = lastSeq.get(key);
      if (prev) compared++;
      if (prev && w.seq < prev.seq)
        problems.push({
          reason: `${w.qp} ${w.queue}: ${wrName(w)} completed after ${wrName(prev.wr)}, which was posted later`,
          evidence: [quote(model.records, prev.at), quote(model.records, c.at)],
          wrs: [ref(w), ref(prev.wr)],
          cqes: cqeRefs([prev.c, c]),
        });
      else lastSeq.set(key, { seq: w.seq, at: c.at, wr: w, c });
    }
    if (problems.length > 0) return fail(problems, compared);
    if (compared === 0) return skip("no work queue had two completions to put in order");
    return pass(`${known.length} completion(s) in posting order on ${lastSeq.size} queue(s)`, compared);
  },
};
