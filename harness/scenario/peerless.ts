/** The cross-field checks of a scenario whose QP is never connected (qp.connect: never or refused). */

type Problem = { path: (string | number)[]; message: string };

/** What the checks read of a parsed scenario. */
interface PeerlessShape {
  workload: string;
  qp: { connect: string };
  peer: { cq: string };
  fanout?: unknown;
  steps: readonly object[];
}

/** A QP that is never connected (qp.connect: never or refused) has no peer to act on or to share its CQs. */
export function peerlessProblems(s: PeerlessShape): Problem[] {
  if (s.qp.connect === "established") return [];
  const why = `qp.connect: ${s.qp.connect} leaves the QP without a peer`;
  const out: Problem[] = [];
  if (s.workload !== "verbs")
    out.push({ path: ["qp", "connect"], message: `${why}; a ULP workload makes its own` });
  if (s.fanout) out.push({ path: ["fanout"], message: `${why}; fanout pairs are connected pairs` });
  if (s.peer.cq === "qp") out.push({ path: ["peer", "cq"], message: `${why} to share its CQs` });
  s.steps.forEach((step, i) => {
    const kind = Object.keys(step).find((k) => k !== "timeout_ms" && k !== "expect") ?? "";
    const body = (step as Record<string, unknown>)[kind];
    const on = body !== null && typeof body === "object" ? (body as { on?: unknown }).on : undefined;
    if (on === "peer" || on === "fanout")
      out.push({ path: ["steps", i, kind, "on"], message: `${why}: a step on: ${on} has nothing to act on` });
  });
  return out;
}
