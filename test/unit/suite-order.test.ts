// The run order on one guest: scenarios whose hang is foreseen go last (no reboot after them);
// the others keep their order.
import t from "tap";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import { foreseesHang, hangsLast } from "../../harness/suite/order.ts";

const OPTS = { addr: "10.0.2.15", port: 7700 };

function compiled(name: string, lines: string[]) {
  return compileScenario(
    parseScenario(["description: d", "covers: [9]", ...lines].join("\n"), `${name}.yaml`),
    OPTS,
  );
}

const plain = compiled("plain", ["steps: [ { drain: {} } ]"]);
const stalled = compiled("stalled", [
  "steps:",
  "  - fault: { kind: stall-queue, queue: sq }",
  "  - drain: {}",
  "expect_fail: { rules: [9], why: the marker never completes }",
]);
const stalledAWhile = compiled("stalled-a-while", [
  "steps:",
  "  - fault: { kind: stall-queue, queue: sq, ms: 500 }",
  "  - drain: {}",
]);
const stalledThenResumed = compiled("stalled-then-resumed", [
  "steps:",
  "  - fault: { kind: stall-queue, queue: sq }",
  "  - post_send: { count: 2 }",
  "  - fault: { kind: resume-queue, queue: sq }",
  "  - drain: {}",
]);
const peerResumed = compiled("peer-resumed", [
  "steps:",
  "  - fault: { kind: stall-queue, queue: sq }",
  "  - fault: { kind: stall-queue, queue: sq, on: peer }",
  "  - fault: { kind: resume-queue, queue: sq, on: peer }",
  "  - drain: {}",
]);
const ignored = compiled("ignored", [
  "steps:",
  "  - fault: { kind: ignore-doorbell, queue: rq }",
  "  - drain: {}",
]);
const expectedHang = compiled("expected-hang", [
  "steps:",
  "  - fault: { kind: drop-cqe }",
  "  - drain: {}",
  "expect_fail: { rules: [hang, 9], why: the flush completion is dropped }",
]);
const dropped = compiled("dropped", ["steps:", "  - fault: { kind: drop-cqe }", "  - drain: {}"]);

t.test("which hangs are foreseen", async (t) => {
  t.equal(foreseesHang(plain), false);
  t.equal(foreseesHang(stalled), true, "a queue stalled for good");
  t.equal(foreseesHang(stalledAWhile), false, "a stall with an end is not a hang");
  t.equal(foreseesHang(stalledThenResumed), false, "nor one a later step resumes");
  t.equal(foreseesHang(peerResumed), true, "a resume of the peer's queue leaves the QP's stalled");
  t.equal(foreseesHang(ignored), true, "ignored doorbells");
  t.equal(foreseesHang(expectedHang), true, "an expected failure of rule hang");
  t.equal(foreseesHang(dropped), false, "a dropped CQE without an expected hang");
});

t.test("foreseen hangs run last, each group in its order", async (t) => {
  const items = [stalled, plain, expectedHang, dropped, stalledAWhile].map((c) => ({ compiled: c }));
  t.same(
    hangsLast(items).map((i) => i.compiled.scenario.name),
    ["plain", "dropped", "stalled-a-while", "stalled", "expected-hang"],
  );
  t.same(
    hangsLast([{ compiled: plain }, { compiled: dropped }]).map((i) => i.compiled.scenario.name),
    ["plain", "dropped"],
    "nothing moves when nothing is foreseen to hang",
  );
});
