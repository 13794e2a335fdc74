// Device faults armed in the middle of a hil-uverbs run: user QPs on the emulated erdma (Linux
// 6.12, rdma-core's erdma provider), the program streaming its input (-s) over the SSH exec
// channel, the host waiting for every command so far to be done before it arms a fault on the
// device's control channel and sends the rest. First the driver on its own (runUverbsSegments,
// the fault armed by hand between the connection and the posts), then the fault scenarios as
// `hil run --executor user` runs them: the injected WQE error is a hardware-initiated ERROR whose
// flushes pass (rule 9 is the provider's known -EIO on the drain marker), a duplicated flush
// completion is caught by rule 5; each fault is armed before the WQEs it hits and fires on them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { prepareGuest } from "../../harness/boot.ts";
import { runUverbsSegments, type UverbsPause } from "../../harness/executor/uverbs-driver.ts";
import {
  type ErdmaTraceEventOf,
  type ErdmaTraceKind,
  eventsOf,
  type HwTraceEvent,
  isServerLine,
  readHwTrace,
} from "../../harness/protocol/hw-trace.ts";
import {
  completionsOf,
  parseTrace,
  recordsOf,
  WC_SUCCESS,
  WC_WR_FLUSH_ERR,
} from "../../harness/protocol/trace.ts";
import { WcStatus } from "../../qemu/erdma/hw.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";
import { bootForTest } from "../support/guest.ts";
import { ERROR_WQE_SQ_COMPLETIONS } from "../support/send-recv-checks.ts";
import { ruleOf, scenarioOf, verdictsOf } from "../support/verdicts.ts";

t.setTimeout(20 * 60 * 1000);

const IP = "10.0.2.15";
/** erdma's SEND_STAG_INVALID_ERR, which the driver maps to IB_WC_LOC_ACCESS_ERR (8) */
const SEND_STAG_INVALID_ERR = WcStatus.SEND_STAG_INVALID_ERR;
const WC_LOC_ACCESS_ERR = 8;
const RDMA_CORE_ERDMA = "https://github.com/linux-rdma/rdma-core/blob/v44.0/providers/erdma/erdma_verbs.c";

/** The first device event of a kind matching `f`, and its place in the trace. */
function firstOf<K extends ErdmaTraceKind>(
  events: readonly HwTraceEvent[],
  kind: K,
  f: (e: ErdmaTraceEventOf<K>) => boolean,
): { e?: ErdmaTraceEventOf<K>; at: number } {
  const at = events.findIndex((e) => !isServerLine(e) && e.kind === kind && f(e as ErdmaTraceEventOf<K>));
  return { e: events[at] as ErdmaTraceEventOf<K> | undefined, at };
}

t.test("runUverbsSegments on a real guest: a fault armed between the connection and the posts", async (t) => {
  const prepared = await prepareGuest({ base: "debian:6.12", configs: [] });
  const traceFile = join(t.testdir({}), "hw-trace.jsonl");
  const g = await bootForTest(t, prepared, { memoryMiB: 512, device: { traceFile } });
  const device = g.device;
  if (!device) throw new Error("no device attached");
  const modprobe = await g.exec("modprobe erdma", { timeoutMs: 60_000 });
  t.equal(modprobe.exitCode, 0, modprobe.stderr);

  const setup = [
    `device addr=${IP}`,
    "pd name=pd0 rkey=global",
    "cq name=cqa depth=256",
    "cq name=cqb depth=256",
    `listen name=L addr=${IP} port=7475 qp=b pd=pd0 scq=cqb rcq=cqb sq=64 rq=64`,
    `connect name=a addr=${IP} port=7475 pd=pd0 scq=cqa rcq=cqa`,
  ];
  const traffic = [
    "post_recv qp=b wr_id=100 count=8",
    "post_send qp=a wr_id=1 count=4 len=64 signal=all",
    "poll cq=cqa min=4 timeout=5000",
    "poll cq=cqb min=1 timeout=5000",
  ];
  const pauses: UverbsPause[] = [];
  let qpn: number | undefined;
  const run = await runUverbsSegments(
    g,
    [setup, traffic],
    async (pause) => {
      pauses.push(pause);
      qpn = recordsOf(pause.trace.records, "create").find((c) => c.kind === "qp" && c.name === "a")?.qp_num;
      const armed = await device.control({
        op: "fault",
        fault: { kind: "error-wqe", qpn, queue: "sq", nth: 2, status: SEND_STAG_INVALID_ERR },
      });
      if (!armed.ok) throw new Error(`the device refused the fault: ${armed.error}`);
    },
    { timeoutMs: 120_000, check: false },
  );
  t.equal(pauses.length, 1, "one pause, between the two segments");
  const sofar = pauses[0]?.trace.records ?? [];
  t.same(
    recordsOf(sofar, "done").map((d) => [d.op, d.rc]),
    setup.map((l) => [l.split(" ")[0], 0]),
    "at the pause every setup command is done, and OK",
  );
  t.same(recordsOf(sofar, "post"), [], "and nothing of the next segment has run");
  t.ok(qpn !== undefined, `QP a is ${qpn} (from the trace so far)`);

  t.same(
    completionsOf(run.records, "a", "sq").map((c) => [c.wr_id, c.status]),
    [
      [1, WC_SUCCESS],
      [2, WC_LOC_ACCESS_ERR],
      [3, WC_WR_FLUSH_ERR],
      [4, WC_WR_FLUSH_ERR],
    ],
    "the second SEND fails as armed; the QP errs and flushes the rest",
  );
  t.same(
    run.done.map((d) => d.rc),
    [...setup, ...traffic].map(() => 0),
    "every command of both segments ran",
  );

  const events = readHwTrace(traceFile, { lenient: true });
  const armed = firstOf(events, "fault", (e) => e.action === "armed");
  const fired = firstOf(events, "fault", (e) => e.action === "fired");
  const firstSqWqe = firstOf(events, "wqe", (e) => e.qpn === qpn && e.queue === "sq");
  t.match(armed.e?.fault, { kind: "error-wqe", qpn }, "the fault armed on QP a");
  t.ok(
    armed.at >= 0 && firstSqWqe.at > armed.at,
    "armed before the device met the QP's first SQE (the posts waited for it)",
  );
  t.equal(fired.e?.context?.index, 1, "fired on the second SQE");
  t.ok(
    eventsOf(events, "wqe").some((e) => e.qpn === qpn && e.index === 1 && e.status === SEND_STAG_INVALID_ERR),
    "which completed with the injected status",
  );
});

t.test("hil run --executor user arms the fault scenarios' faults, debian:6.12", async (t) => {
  const iso = isolate();
  const dir = t.testdir({});
  const r = await hil(
    ["run", "--executor", "user", "--scenario", "fault-error-wqe,fault-duplicate-cqe", "--run-dir", dir],
    iso.env,
  );
  t.equal(r.exitCode, 0, `every verdict PASS or XFAIL\n${r.stdout}${r.stderr}`.slice(0, 4000));
  const scenario = (name: string) => scenarioOf(dir, name);
  const verdicts = verdictsOf;
  const rule = ruleOf;

  const err = scenario("fault-error-wqe");
  t.equal(err.outcome, undefined, "it ran");
  t.same(verdicts(err), ["ib XFAIL", "iwarp-rdmac PASS", "linux XFAIL"]);
  t.match(
    rule(err, "ib", "1")?.reason,
    /^known bug \(https:\/\/github\.com\/linux-rdma\/rdma-core\/.*\): the drain's sq marker post to qp in ERR returned -?5, not 0/,
    "under ib only the provider's -EIO on the drain's marker, a send posted in ERROR",
  );
  for (const id of ["4", "5", "7"])
    t.equal(
      rule(err, "linux", id)?.verdict,
      "PASS",
      `rule ${id}: the hardware-initiated error is flushed right`,
    );
  const r9 = rule(err, "linux", "9");
  t.equal(r9?.verdict, "XFAIL");
  t.match(
    r9?.reason,
    /^known bug \(https:\/\/github\.com\/linux-rdma\/rdma-core\/.*\): the sq drain marker of qp was refused \(post returned 5\)/,
    "rule 9 only for the provider's -EIO on the drain marker",
  );
  t.same(
    err.knownBugs?.map((b) => b.reference),
    [RDMA_CORE_ERDMA],
  );
  const fault = err.observations?.find((o) => o.ev === "fault");
  t.match(fault, {
    step: 1,
    kind: "error-wqe",
    spec: { kind: "error-wqe", queue: "sq", nth: 4, status: 10 },
  });
  const records = parseTrace(readFileSync(join(dir, err.trace ?? "none"), "utf8"));
  t.same(
    completionsOf(records, "qp", "sq").map((c) => `${c.wr_id} ${c.status_name}`),
    ERROR_WQE_SQ_COMPLETIONS,
    "WR 1003 failed as armed, the rest flushed in order",
  );
  const qpn = recordsOf(records, "create").find((c) => c.kind === "qp" && c.name === "qp")?.qp_num;
  t.equal(fault?.spec?.qpn, qpn, "the fault named the QP the user trace created");
  const hw = readHwTrace(join(dir, err.hwTrace ?? "none"));
  const armed = firstOf(hw, "fault", (e) => e.action === "armed");
  // the scenario also holds the SQ (stall-queue) until its SENDs are rung: the error-wqe's firing
  const fired = firstOf(
    hw,
    "fault",
    (e) => e.action === "fired" && (e.fault as { kind?: string } | undefined)?.kind === "error-wqe",
  );
  const firstSqWqe = firstOf(hw, "wqe", (e) => e.qpn === qpn && e.queue === "sq");
  t.ok(armed.at >= 0 && firstSqWqe.at > armed.at, "armed before the SENDs reached the device");
  t.equal(fired.e?.context?.index, 3, "fired on the fourth SQE (WR 1003)");
  t.ok(
    eventsOf(hw, "wqe").some((e) => e.qpn === qpn && e.index === 3 && e.status === SEND_STAG_INVALID_ERR),
    "the WQE completed with the injected status",
  );

  const dup = scenario("fault-duplicate-cqe");
  t.same(verdicts(dup), ["ib XFAIL", "iwarp-rdmac XFAIL", "linux XFAIL"]);
  const dup5 = rule(dup, "linux", "5");
  t.equal(dup5?.verdict, "XFAIL");
  t.match(
    dup5?.reason,
    /^injected fault \(.*\): qp rq WR 2003 completed 2 times/,
    "the oracle caught the duplicate",
  );
  t.ok(
    dup5?.evidence?.some((e) => /^hw fault .*"action":"fired".*"duplicate-cqe"/.test(e)),
    "the fired fault is quoted from the hardware trace",
  );
  t.match(rule(dup, "linux", "9")?.reason, /^known bug \(https:\/\/github\.com\/linux-rdma\/rdma-core\//);
  t.match(
    dup.observations?.find((o) => o.ev === "fault"),
    {
      step: 1,
      kind: "duplicate-cqe",
      spec: { queue: "rq", nth: 4 },
    },
  );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
});
