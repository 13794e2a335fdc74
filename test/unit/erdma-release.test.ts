// The device letting a hung drain go after its hang was judged (qemu/erdma/release.ts): a QP in
// ERROR whose WQEs were posted after the last REFLUSH (the no-reflush-after-post mutant's drain
// marker) holds them unflushed for good; release flushes them up to the doorbells, as the
// REFLUSH naming them would, and traces that the harness did it. QPs not in ERROR, or with
// nothing outstanding, are left alone. The control channel's "release" does it per device.
import t from "tap";
import { handleControl } from "../../qemu/erdma/control.ts";
import { RELEASE_MODE } from "../../qemu/erdma/release.ts";
import { writePair } from "../doubles/erdma-dp-fixture.ts";
import { QpState } from "../doubles/erdma-driver.ts";
import { Syndrome as S } from "../doubles/erdma-sqe.ts";

async function inError() {
  return writePair(false);
}

/**
 * A's QP in ERROR with one WRITE (`wrId`) posted after it got there: the drain's marker, with no
 * REFLUSH after it (the driver double sends none).
 */
async function postedInError(wrId: bigint) {
  const { p, w } = await inError();
  await p.a.drv.modifyQp(p.a.qp, QpState.ERROR);
  await p.settle();
  p.a.drv.postSend(p.a.qp, [w(wrId)]);
  await p.settle();
  return p;
}

t.test("a WQE posted in ERROR after the last REFLUSH stays until released", async (t) => {
  const p = await postedInError(99n);
  t.same(p.a.drv.pollWc(p.a.scq), [], "never flushed: the device flushes only what a REFLUSH named");
  t.same(p.a.dev.release(), [p.a.qp.qpn], "the QP in ERROR with a WQE outstanding is released");
  await p.settle();
  t.match(p.a.drv.pollWc(p.a.scq), [{ wrId: 99n, status: S.FLUSH_ERR }], "flushed");
  t.match(
    p.a.host.ofKind("reflush").at(-1),
    { qpn: p.a.qp.qpn, mode: RELEASE_MODE },
    "traced as the harness's",
  );
  t.same(p.a.dev.release(), [], "nothing left to release");
});

t.test("QPs not in ERROR, or with nothing outstanding, are left alone", async (t) => {
  const { p, w } = await inError();
  const stalled = p.a.dev.faults.add({ kind: "stall-queue", queue: "sq", qpn: p.a.qp.qpn });
  t.ok(stalled);
  p.a.drv.postSend(p.a.qp, [w(1n)]);
  await p.settle();
  t.same(p.a.dev.release(), [], "an RTS QP's stalled WQE is not the release's");
  t.same(p.a.drv.pollWc(p.a.scq), []);
  p.a.dev.faults.clear();
  await p.settle();
  t.same(p.b.dev.release(), [], "nothing outstanding anywhere");
});

t.test('the control channel: "release" names the QPs it let go', async (t) => {
  const p = await postedInError(7n);
  const dev = { faults: p.a.dev.faults, snapshot: () => ({}), release: () => p.a.dev.release() };
  t.same(handleControl(new Map([["erdma0", dev]]), '{"op":"release"}'), { ok: true, qps: [p.a.qp.qpn] });
  const mute = { faults: p.a.dev.faults, snapshot: () => ({}) };
  t.match(handleControl(new Map([["erdma0", mute]]), '{"op":"release"}'), {
    ok: false,
    error: /cannot release/,
  });
});
