/**
 * The rules of a ULP workload (NVMe over Fabrics on RDMA): what its users would call a bug. Data
 * the block layer acknowledged reads back as written; an I/O error reported to the block layer is
 * not a loss. Every step does what it meant (connect, disconnect, teardown). Every step returns:
 * a disconnect or a target's teardown stuck in ib_drain_qp is a hang. The teardown leaves no QP,
 * MR, PD or connection behind, neither in the kernel nor on the device.
 */
import { eventsOf, type HwTraceEvent } from "../../protocol/hw-trace.ts";
import type { UlpObjectsObservation, UlpStepObservation } from "../../protocol/observations.ts";
import { leftBehind } from "../../protocol/observations.ts";
import { halfOpenConnections } from "../half-open.ts";
import { fail, type Problem, pass, type Rule, skip } from "../rule.ts";

function ulpSteps(observations: readonly { ev: string }[]): UlpStepObservation[] {
  return observations.filter((o): o is UlpStepObservation => o.ev === "ulp-step");
}

/** What a failed or hung connect's reason adds when the device saw connections open on one side. */
function halfSaid(halfOpen: readonly string[]): string {
  return halfOpen.length > 0
    ? `; the device saw ${halfOpen.length} connection(s) reach RTS on one side only`
    : "";
}

function stepName(s: UlpStepObservation): string {
  return `step ${s.step + 1} (${s.action})`;
}

export const ulpDataRule: Rule = {
  id: "ulp-data",
  title: "data the block layer acknowledged reads back as written",
  citation:
    "Linux block layer: a request completed without error has moved its data (block/blk-mq.c blk_mq_end_request); NVMe over Fabrics 1.1 sec. 2 (commands carry data unchanged)",
  judge({ observations }) {
    const ios = ulpSteps(observations).filter((s) => s.values["written-sha256"] !== undefined);
    if (ios.length === 0) return skip("no I/O step wrote data");
    const problems: Problem[] = [];
    for (const io of ios) {
      const v = io.values;
      if (v["write-error"] !== undefined || v["read-error"] !== undefined) continue; // reported
      if (v["read-sha256"] === undefined) {
        problems.push({
          reason: `${stepName(io)}: the data written was not read back and no I/O error was reported`,
          evidence: [`exit ${io.exitCode}${io.stderr ? `: ${io.stderr}` : ""}`],
        });
        continue;
      }
      if (v["read-sha256"] !== v["written-sha256"] || v.differ !== undefined)
        problems.push({
          reason: `${stepName(io)}: ${v.bytes ?? "?"} bytes read back differ from what was written, and no I/O error was reported`,
          evidence: [
            `written sha256 ${v["written-sha256"]}`,
            `read    sha256 ${v["read-sha256"]}`,
            ...(v.differ ? [`first difference: ${v.differ}`] : []),
          ],
        });
    }
    if (problems.length > 0) return fail(problems, ios.length);
    const reported = ios.filter((s) => s.values["write-error"] ?? s.values["read-error"]).length;
    return pass(
      `${ios.length} I/O step(s): the data read back is the data written${reported ? ` (${reported} reported an I/O error)` : ""}`,
      ios.length,
    );
  },
};

function allowed(s: UlpStepObservation): boolean {
  if (s.expect === "any") return true;
  if (s.expect === "error") return s.exitCode !== 0;
  return s.exitCode === 0;
}

export const ulpStepsRule: Rule = {
  id: "ulp-steps",
  title: "every ULP step does what it meant (connect, I/O, disconnect, teardown)",
  citation: "the scenario's steps and their expect (fixtures/scenarios/README.md)",
  judge({ observations, hw }) {
    const steps = ulpSteps(observations);
    if (steps.length === 0) return skip("no ULP step returned");
    // a connect that failed while the device saw its peer accept: the connection is half open
    const halfOpen = hw ? halfOpenConnections(hw) : [];
    const opened = (s: UlpStepObservation) => (s.action === "connect" ? halfOpen : []);
    const problems = steps
      .filter((s) => !allowed(s))
      .map(
        (s): Problem => ({
          reason: `${stepName(s)} exited ${s.exitCode}${s.expect === 0 ? "" : ` (expected ${s.expect})`}${s.stderr ? `: ${s.stderr.split("\n")[0]}` : ""}${halfSaid(opened(s))}`,
          evidence: [...(s.stderr ? s.stderr.split("\n").slice(0, 6) : []), ...opened(s)],
        }),
      );
    return problems.length > 0
      ? fail(problems, steps.length)
      : pass(`${steps.length} ULP step(s) did what they meant`, steps.length);
  },
};

/** The commands that free a device object; one the device refused leaves the object behind. */
const RELEASES = new Set(["DESTROY_QP", "DESTROY_CQ", "DEREG_MR"]);

/** The release commands the device refused, with their reasons, from the device's own trace. */
function refusedReleases(hw: readonly HwTraceEvent[] | undefined): string[] {
  return eventsOf(hw ?? [], "cmd")
    .filter((e) => RELEASES.has(e.name) && e.status !== 0)
    .map((e) => `${e.dev} ${e.name} refused (${e.statusName})${e.reason ? `: ${e.reason}` : ""}`);
}

export const ulpLeakRule: Rule = {
  id: "ulp-leak",
  title: "the ULP's teardown leaves no RDMA object behind",
  citation:
    "Linux rdma restrack (drivers/infiniband/core/restrack.c: every object is released with its owner); ib_dealloc_pd_user WARNs on a PD still in use",
  judge({ observations, hw }) {
    const counts = observations.filter((o): o is UlpObjectsObservation => o.ev === "ulp-objects");
    if (counts.length === 0)
      return skip("the objects were not counted after the teardown (it did not finish)");
    const problems = counts.flatMap((c) => {
      const left = leftBehind(c.before, c.after);
      if (left.length === 0) return [];
      const where = c.source === "device" ? "the device still holds" : "the kernel still tracks";
      // the device's count: the release commands it refused say why (the kernel forgot them anyway)
      const refused = c.source === "device" ? refusedReleases(hw) : [];
      return [
        {
          reason: `after the teardown ${where} ${left.map((l) => `${l.after - l.before} ${l.kind}(s)`).join(", ")} more than before the scenario${refused.length > 0 ? `; ${refused.join("; ")}` : ""}`,
          evidence: [
            ...left.map((l) => `${c.source} ${l.kind}: ${l.before} before, ${l.after} after`),
            ...refused.map((r) => `hw: ${r}`),
          ],
        },
      ];
    });
    return problems.length > 0
      ? fail(problems, counts.length)
      : pass(
          `nothing left behind (${counts.map((c) => (c.source === "device" ? "device model" : "rdma resource")).join(" and ")}; CQs kept by the kernel's CQ pool not counted)`,
          counts.length,
        );
  },
};

export const ulpReturnsRule: Rule = {
  id: "hang",
  title: "every ULP step returns (no hang in connect, I/O, disconnect or teardown)",
  citation:
    "Linux verbs.c ib_drain_qp() waits with no timeout: a ULP's disconnect or teardown stuck there is the driver's hang",
  judge({ observations, hw }) {
    const watched = ulpSteps(observations).length;
    const stuck = observations.filter((o) => o.ev === "stuck");
    if (stuck.length === 0) return pass("every ULP step returned within its watchdog", watched);
    // a connect that hangs while the device saw its peer accept: the connection is half open
    const halfOpen = hw ? halfOpenConnections(hw) : [];
    return fail(
      stuck.map((s) => ({
        reason: `${s.op} (step ${s.step + 1}) did not return within ${s.ms} ms; its task is ${s.state}${halfSaid(
          s.op === "ulp connect" ? halfOpen : [],
        )}${s.unread?.length ? `; ${s.unread.join("; ")}` : ""}`,
        evidence: [
          ...s.stack.split("\n").map((l) => `stack: ${l}`),
          ...(s.op === "ulp connect" ? halfOpen : []),
        ],
      })),
      watched + stuck.length,
    );
  },
};
