// Connections the device saw open on one side only (harness/oracle/half-open.ts), which a failed or
// hung ULP connect names; and the hw-protocol contract every problem of that rule opens with
// (harness/oracle/hw-protocol/contract.ts): each check's label, requirement and citation.
import t from "tap";
import { halfOpenConnections } from "../../harness/oracle/half-open.ts";
import { contractLine, HW_CONTRACT, type HwCheck } from "../../harness/oracle/hw-protocol/contract.ts";
import type { ErdmaTraceEventOf, HwTraceEvent } from "../../harness/protocol/hw-trace.ts";
import { erdmaTraceEventSchema } from "../../qemu/erdma/trace-schema.ts";
import { cmdEventBody } from "../support/hw-trace-events.ts";

const A = { sip: "10.0.0.1", dip: "10.0.0.2", sport: 4420, dport: 5000 };
const MIRROR = { sip: "10.0.0.2", dip: "10.0.0.1", sport: 5000, dport: 4420 };

function modify(
  qpn: unknown,
  detail: Record<string, unknown>,
  more: Record<string, unknown> = {},
): ErdmaTraceEventOf<"cmd"> {
  return erdmaTraceEventSchema.parse({
    t: 1,
    dev: "erdma",
    ...cmdEventBody("MODIFY_QP", 0, { detail: { qpn, ...detail } }),
    ...more,
  }) as ErdmaTraceEventOf<"cmd">;
}

t.test("a QP at RTS whose connection's other side never reached RTS is half open", (t) => {
  t.same(halfOpenConnections([modify(4, { to: "RTS", connection: A })]), [
    "hw: erdma QP 4 reached RTS on 10.0.0.1:4420 <-> 10.0.0.2:5000; no QP reached RTS on its other side (10.0.0.2:5000)",
  ]);
  t.same(
    halfOpenConnections([
      modify(4, { to: "RTS", connection: A }),
      { ...modify(7, { to: "RTS", connection: MIRROR }), dev: "erdma1" },
    ]),
    [],
    "both sides reached RTS (on two devices)",
  );
  t.same(
    halfOpenConnections([
      modify(4, { to: "RTS", connection: A }),
      modify(7, { to: "RTS", connection: { ...MIRROR, dport: 4421 } }),
    ]).length,
    2,
    "a connection that is no mirror",
  );
  t.end();
});

t.test("only a MODIFY_QP to RTS the device completed, with its whole connection, counts", (t) => {
  const one = (e: HwTraceEvent) => halfOpenConnections([e]);
  t.same(one({ ...modify(4, { to: "RTS", connection: A }), name: "CREATE_QP" }), [], "another command");
  t.same(
    one({ ...modify(4, { to: "RTS", connection: A }), status: 6, statusName: "BAD_STATE" }),
    [],
    "refused",
  );
  t.same(one(modify(4, { to: "ERROR", connection: A })), [], "to another state");
  t.same(one(modify(4, { to: "RTS" })), [], "no connection");
  for (const [field, value] of [
    ["sip", 1],
    ["dip", null],
    ["sport", "4420"],
    ["dport", undefined],
  ] as const)
    t.same(
      one(modify(4, { to: "RTS", connection: { ...A, [field]: value } })),
      [],
      `connection ${field} not of its type`,
    );
  const { detail: _detail, ...noDetail } = modify(4, {}) as HwTraceEvent & { detail?: unknown };
  t.same(one(noDetail as HwTraceEvent), [], "no detail at all");
  t.match(
    one(modify(undefined, { to: "RTS", connection: A }))[0],
    /^hw: erdma QP undefined reached RTS/,
    "a QP number missing",
  );
  t.same(
    halfOpenConnections([{ src: "vfio-user", t: 1, dev: "erdma", kind: "connect" }]),
    [],
    "the server's lines",
  );
  t.end();
});

t.test(
  "each hw-protocol check has its contract: a label a-g, what it requires, where that is written",
  (t) => {
    const checks = Object.keys(HW_CONTRACT) as HwCheck[];
    t.same(checks.sort(), [
      "cq-doorbell",
      "dma",
      "doorbell",
      "lifetime",
      "qp-state",
      "reflush",
      "status",
      "wqe-format",
    ]);
    for (const check of checks) {
      const c = HW_CONTRACT[check];
      t.match(c.label, /^[a-g]$/, `${check}: label`);
      t.ok(c.what.length > 30, `${check}: what`);
      t.ok(c.citation.length > 30, `${check}: citation`);
      t.equal(contractLine(check), `contract (${c.label}, ${check}): ${c.what} [${c.citation}]`);
    }
    t.same(
      [...new Set(checks.map((c) => HW_CONTRACT[c].label))].sort(),
      ["a", "b", "c", "d", "e", "f", "g"],
      "the seven checks of docs/judging.md (qp-state and status are both f)",
    );
    t.end();
  },
);
