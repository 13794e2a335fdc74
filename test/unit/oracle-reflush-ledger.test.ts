// Check (c) of rule hw-protocol, REFLUSH's producer indexes (harness/oracle/hw-protocol/reflush.ts),
// on the ledger directly: a value a doorbell carried or one still in flight (its doorbell comes
// after) is fine; a value no doorbell carried, one that goes back, one past 16 bits, one in flight
// whose doorbell never comes, or a stale one no later REFLUSH or DESTROY_QP answers is a problem.
import t from "tap";
import { ReflushLedger } from "../../harness/oracle/hw-protocol/reflush.ts";

const reasons = (list: { reason: string }[]) => list.map((f) => f.reason);

t.test("a REFLUSH carrying the indexes the doorbells rang is fine", (t) => {
  const l = new ReflushLedger();
  l.created(1);
  l.doorbell(1, "sq", 4);
  l.doorbell(1, "rq", 2);
  t.same(l.reflush(10, 1.5, 1, { sq: 4, rq: 2 }), []);
  t.same(
    l.reflush(11, 1.6, 1, { sq: 0, rq: 0 }).length,
    2,
    "back to 0 after a REFLUSH that carried more goes back",
  );
  t.same(l.end(), []);
  t.end();
});

t.test("a value no doorbell carried names the doorbells rung (the last six)", (t) => {
  const l = new ReflushLedger();
  l.created(1);
  for (const pi of [1, 2, 3, 4, 5, 6, 7, 8]) l.doorbell(1, "sq", pi);
  l.doorbell(1, "sq", 20);
  t.same(reasons(l.reflush(3, 2, 1, { sq: 60000, rq: 0 })), [
    "REFLUSH of QP 1 carries sq_pi 60000, which no SQ doorbell of QP 1 carried (doorbells: ..., 4, 5, 6, 7, 8, 20)",
  ]);
  const m = new ReflushLedger();
  m.created(2);
  m.doorbell(2, "rq", 3);
  t.same(reasons(m.reflush(3, 2, 2, { sq: 0, rq: 65000 })), [
    "REFLUSH of QP 2 carries rq_pi 65000, which no RQ doorbell of QP 2 carried (doorbells: 3)",
  ]);
  const n = new ReflushLedger();
  n.created(3);
  n.doorbell(3, "sq", 1);
  n.doorbell(3, "sq", 2);
  n.doorbell(3, "sq", 3);
  n.doorbell(3, "sq", 4);
  n.doorbell(3, "sq", 5);
  n.doorbell(3, "sq", 6);
  n.doorbell(3, "sq", 10);
  t.same(reasons(n.reflush(1, 1, 3, { sq: 40000, rq: 0 })), [
    "REFLUSH of QP 3 carries sq_pi 40000, which no SQ doorbell of QP 3 carried (doorbells: ..., 2, 3, 4, 5, 6, 10)",
  ]);
  const o = new ReflushLedger();
  o.created(4);
  t.same(reasons(o.reflush(1, 1, 4, { sq: 40000, rq: 0 })), [
    "REFLUSH of QP 4 carries sq_pi 40000, which no SQ doorbell of QP 4 carried (doorbells: none)",
  ]);
  const p = new ReflushLedger();
  p.created(5);
  for (const pi of [1, 2, 3, 4, 5, 6]) p.doorbell(5, "sq", pi);
  p.doorbell(5, "sq", 9);
  t.match(reasons(p.reflush(1, 1, 5, { sq: 40000, rq: 0 }))[0], /\(doorbells: \.\.\., 2, 3, 4, 5, 6, 9\)$/);
  const q = new ReflushLedger();
  q.created(6);
  for (const pi of [1, 2, 3, 4, 5, 6]) q.doorbell(6, "sq", pi);
  t.match(
    reasons(q.reflush(1, 1, 6, { sq: 40000, rq: 0 }))[0],
    /\(doorbells: 1, 2, 3, 4, 5, 6\)$/,
    "six shown whole",
  );
  t.end();
});

t.test("a value ahead of the doorbells is in flight until a doorbell carries it", (t) => {
  const l = new ReflushLedger();
  l.created(1);
  l.doorbell(1, "sq", 4);
  t.same(l.reflush(5, 2.25, 1, { sq: 6, rq: 0 }), []);
  l.doorbell(1, "rq", 6);
  t.same(
    reasons(l.end()),
    [
      "REFLUSH of QP 1 carries sq_pi 6, ahead of every SQ doorbell the device saw (the last: 4), and no doorbell carrying it came in this trace",
    ],
    "an RQ doorbell carrying 6 is not the SQ's",
  );
  l.doorbell(1, "sq", 5);
  t.equal(l.end().length, 1, "nor a doorbell carrying another value");
  l.doorbell(1, "sq", 6);
  t.same(l.end(), [], "the doorbell came");
  const d = new ReflushLedger();
  d.created(2);
  d.reflush(1, 1, 2, { sq: 3, rq: 0 });
  t.same(reasons(d.destroyed(2)), [
    "REFLUSH of QP 2 carries sq_pi 3, ahead of every SQ doorbell the device saw (the last: 0), and no doorbell carrying it came before its DESTROY_QP",
  ]);
  t.same(d.end(), [], "a destroyed QP's ledger is gone");
  t.same(d.destroyed(9), [], "a QP the ledger never saw");
  t.end();
});

t.test("a stale value (behind the doorbells) needs a later REFLUSH or the QP's destroy", (t) => {
  const l = new ReflushLedger();
  l.created(1);
  l.doorbell(1, "sq", 4);
  l.doorbell(1, "sq", 8);
  t.same(l.reflush(7, 3, 1, { sq: 4, rq: 0 }), [], "4 was rung");
  t.same(reasons(l.end()), [
    "REFLUSH of QP 1 carries sq_pi 4 though the device had seen the SQ doorbell move to 8, and no later REFLUSH or DESTROY_QP of QP 1 follows: the WQEs from 4 to 8 are never reflushed",
  ]);
  t.same(l.reflush(8, 4, 1, { sq: 4, rq: 0 }), [], "4 again: stale again");
  t.equal(l.end().length, 2, "a REFLUSH carrying less than the doorbell it missed answers nothing");
  t.same(l.reflush(9, 5, 1, { sq: 8, rq: 0 }), []);
  t.same(l.end(), [], "one carrying the doorbell it missed answers both");
  const u = new ReflushLedger();
  u.created(3);
  u.doorbell(3, "sq", 4);
  u.doorbell(3, "sq", 8);
  t.same(
    reasons(u.reflush(1, 1, 3, { sq: 7, rq: 0 })),
    ["REFLUSH of QP 3 carries sq_pi 7, which no SQ doorbell of QP 3 carried (doorbells: 4, 8)"],
    "behind the doorbells but never rung",
  );
  const d = new ReflushLedger();
  d.created(2);
  d.doorbell(2, "rq", 5);
  d.doorbell(2, "rq", 9);
  d.reflush(1, 1, 2, { sq: 0, rq: 5 });
  t.same(d.destroyed(2), [], "the driver cancelled its own work");
  t.end();
});

t.test("a value past 16 bits, or going back after a REFLUSH, is a problem", (t) => {
  const l = new ReflushLedger();
  l.created(1);
  t.same(reasons(l.reflush(1, 1, 1, { sq: 65536, rq: 0 })), [
    "REFLUSH of QP 1 carries sq_pi 65536: the driver's sq_pi is a u16 (erdma_verbs.h kern_qp)",
  ]);
  t.equal(
    l.reflush(1, 1, 1, { sq: 65535, rq: 0 }).length,
    1,
    "65535 is a u16 (no doorbell carried it, though)",
  );
  const b = new ReflushLedger();
  b.created(1);
  b.doorbell(1, "rq", 5);
  t.same(b.reflush(1, 2.5, 1, { sq: 0, rq: 5 }), []);
  t.same(reasons(b.reflush(2, 3, 1, { sq: 0, rq: 4 })), [
    "REFLUSH of QP 1 carries rq_pi 4 after a REFLUSH that carried 5 (t=2.5): the RQ producer index went back",
  ]);
  const c = new ReflushLedger();
  c.created(1);
  c.doorbell(1, "sq", 3);
  c.reflush(1, 1, 1, { sq: 3, rq: 0 });
  t.same(c.reflush(2, 2, 1, { sq: 3, rq: 0 }), [], "the same value again is no going back");
  c.doorbell(1, "sq", 32771);
  t.same(c.reflush(3, 3, 1, { sq: 32771, rq: 0 }), [], "half the space ahead is ahead, not back");
  t.end();
});

t.test("a QP created before the trace: a value behind its doorbells may have been rung before", (t) => {
  const l = new ReflushLedger();
  l.doorbell(4, "sq", 100);
  t.same(l.reflush(1, 1, 4, { sq: 50, rq: 0 }), [], "not known unrung: stale");
  t.equal(l.end().length, 1, "stale and unanswered");
  const m = new ReflushLedger();
  t.same(m.reflush(1, 1, 5, { sq: 40000, rq: 0 }), [], "no doorbell seen at all");
  const n = new ReflushLedger();
  n.created(6);
  t.equal(
    n.reflush(1, 1, 6, { sq: 40000, rq: 0 }).length,
    1,
    "created in the trace: every doorbell is known",
  );
  t.end();
});
