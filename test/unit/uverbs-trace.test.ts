// The userspace executor's host side without a guest: its trace (the kernel executor's records
// plus the user drain's own kinds), the guest command line, and runUverbs against a scripted shell
// (results, refusals, failed commands, hangs, and the host-side kill with its evidence).
import t from "tap";
import { runUverbs, UVERBS_EXIT, uverbsCommand } from "../../harness/executor/uverbs-driver.ts";
import { parseTrace, wholeLines } from "../../harness/protocol/trace.ts";
import type { ExecOptions, ExecResult } from "../../qemu/launch/ssh.ts";

const lines = (records: object[]) => records.map((r) => `${JSON.stringify(r)}\n`).join("");

const HELLO = { seq: 0, ns: 1, ev: "hello", version: 1, release: "6.12.95", pid: 81 };
const DRAIN = [
  { seq: 1, ns: 2, ev: "drain", call: 5, qp: "a", which: "sq" },
  { seq: 2, ns: 3, ev: "modify", call: 6, qp: "a", state: "ERR" },
  { seq: 3, ns: 4, ev: "modify_ret", call: 6, rc: 0 },
  { seq: 4, ns: 5, ev: "drain_marker", call: 5, qp: "a", queue: "sq", how: "user", wr_id: 2 ** 52, rc: 0 },
];
const MARKER_CQE = {
  seq: 5,
  ns: 6,
  ev: "drain_marker_cqe",
  call: 5,
  cq: "cqa",
  qp: "a",
  queue: "sq",
  status: 5,
  status_name: "WR_FLUSH_ERR",
  opcode: 1,
  opcode_name: "RDMA_WRITE",
  qp_num: 1,
  vendor_err: 0,
};
const HANG = {
  seq: 5,
  ns: 6,
  ev: "hang",
  call: 5,
  qp: "a",
  op: "drain",
  which: "sq",
  queue: "sq",
  cq: "cqa",
  waited_ms: 3001,
};

t.test("the user drain's records are records of the one trace schema", async (t) => {
  const records = parseTrace(
    lines([HELLO, ...DRAIN, MARKER_CQE, { seq: 6, ns: 7, ev: "drain_ret", call: 5, us: 40 }]),
  );
  t.same(
    records.map((r) => r.ev),
    ["hello", "drain", "modify", "modify_ret", "drain_marker", "drain_marker_cqe", "drain_ret"],
    "every kind parsed, in order",
  );
  t.same(parseTrace(""), []);
  t.throws(() => parseTrace(lines([HELLO, { ...HANG, waited_ms: -1 }])), {
    message: /line 2 is not a valid record/,
    detail: /waited_ms/,
  });
  t.throws(() => parseTrace(lines([HELLO, { ...DRAIN[3], how: "firmware" }])), {
    message: /line 2 is not a valid record/,
    detail: /how/,
  });
  t.throws(
    () => parseTrace(lines([HELLO, { ...DRAIN[0], extra: 1 }])),
    { message: /not a valid record/ },
    "a known kind with a field its schema lacks is refused",
  );
  t.throws(() => parseTrace(lines([HELLO, { ...HANG, seq: 0 }])), { message: /seq 0 after 0/ });
  t.throws(() => parseTrace(`${JSON.stringify(HELLO)}`), { message: /middle of a line/ });
  t.throws(() => parseTrace("{not json\n"), { message: /not JSON/ });
  t.equal(wholeLines('{"a":1}\n{"b"'), '{"a":1}\n', "an incomplete last line is dropped");
  t.equal(wholeLines("partial"), "");
});

t.test("uverbsCommand: a pid file for the watchdog, removed whatever happens", async (t) => {
  const cmd = uverbsCommand("/tmp/hil-uverbs-abc.pid", 2500);
  t.equal(
    cmd,
    `sh -c 'echo $$ > "$0" && exec /usr/bin/hil-uverbs -w 2500' '/tmp/hil-uverbs-abc.pid'; rc=$?; rm -f '/tmp/hil-uverbs-abc.pid'; exit $rc`,
  );
});

/** A guest whose hil-uverbs prints `stdout` and exits with `exitCode`, or hangs until killed. */
function scriptedGuest(behaviour: { stdout: string; exitCode: number } | { hang: string }) {
  const calls: { command: string; opts?: ExecOptions }[] = [];
  let release: ((r: ExecResult) => void) | undefined;
  const guest = {
    calls,
    exec(command: string, opts?: ExecOptions): Promise<ExecResult> {
      calls.push({ command, opts });
      if (command.startsWith("sh -c")) {
        if ("stdout" in behaviour)
          return Promise.resolve({ stdout: behaviour.stdout, stderr: "", exitCode: behaviour.exitCode });
        return new Promise((resolve) => {
          release = resolve;
        });
      }
      // the watchdog's evidence-and-kill script
      const r = {
        stdout: "pid 81\nstate S (sleeping)\nwchan hrtimer_nanosleep\nstack\n[<0>] do_nanosleep+0x6d/0x1a0\n",
        stderr: "",
        exitCode: 0,
      };
      if ("hang" in behaviour) release?.({ stdout: behaviour.hang, stderr: "", exitCode: 137 });
      return Promise.resolve(r);
    },
  };
  return guest;
}

t.test("runUverbs", async (t) => {
  const ok = lines([
    HELLO,
    { seq: 1, ns: 2, ev: "cmd", id: 1, line: "sleep ms=1" },
    { seq: 2, ns: 3, ev: "done", id: 1, op: "sleep", rc: 0, us: 1000 },
  ]);
  const g = scriptedGuest({ stdout: ok, exitCode: 0 });
  const r = await runUverbs(g, ["sleep ms=1"]);
  t.same(
    r.done.map((d) => d.op),
    ["sleep"],
  );
  t.equal(r.killed, undefined);
  t.equal(g.calls[0]?.opts?.input, "sleep ms=1\n", "the lines go to stdin");
  t.match(g.calls[0]?.command, /hil-uverbs -w 10000'/, "the default drain timeout");

  await t.rejects(runUverbs(g, ["pd name=a\nreset"]), { message: /not a hil-uverbs command line/ });

  const rejected = lines([
    HELLO,
    { seq: 1, ns: 2, ev: "reject", line: "clear", why: "line 1: clear: not run" },
  ]);
  await t.rejects(runUverbs(scriptedGuest({ stdout: rejected, exitCode: UVERBS_EXIT.rejected }), ["clear"]), {
    message: /refused the input/,
    detail: /line 1: clear/,
  });

  const failed = lines([
    HELLO,
    { seq: 1, ns: 2, ev: "cmd", id: 1, line: "query qp=x" },
    { seq: 2, ns: 3, ev: "done", id: 1, op: "query", rc: -2, us: 1, err: "no QP x" },
  ]);
  await t.rejects(
    runUverbs(scriptedGuest({ stdout: failed, exitCode: UVERBS_EXIT.commandFailed }), ["query qp=x"]),
    {
      message: /1 command\(s\) failed/,
      detail: /#1 query: rc -2 \(no QP x\)/,
    },
  );

  const hung = lines([HELLO, ...DRAIN, HANG]);
  const h = await runUverbs(
    scriptedGuest({ stdout: hung, exitCode: UVERBS_EXIT.hang }),
    ["drain qp=a which=sq"],
    {
      check: false,
    },
  );
  t.same(h.hang && [h.hang.qp, h.hang.queue, h.hang.waited_ms], ["a", "sq", 3001], "the hang record");
  await t.rejects(runUverbs(scriptedGuest({ stdout: hung, exitCode: UVERBS_EXIT.hang }), ["drain qp=a"]), {
    message: /drain sq of a hung: the sq marker did not complete in 3001 ms/,
  });

  const partial = `${lines([HELLO, { seq: 1, ns: 2, ev: "cmd", id: 1, line: "sleep ms=30000" }])}{"seq":2,"ns"`;
  const hg = scriptedGuest({ hang: partial });
  const k = await runUverbs(hg, ["sleep ms=30000"], { timeoutMs: 50, check: false });
  t.same(
    k.killed && [k.killed.pid, k.killed.state, k.killed.wchan, k.killed.stack],
    [81, "S (sleeping)", "hrtimer_nanosleep", "[<0>] do_nanosleep+0x6d/0x1a0"],
    "the evidence collected before the kill",
  );
  t.match(
    hg.calls[1]?.command,
    /cat '\/tmp\/hil-uverbs-[0-9a-f]{12}\.pid'[\s\S]*kill -KILL \$pid/,
    "kills by the pid file",
  );
  t.equal(k.exitCode, 137);
  t.same(
    k.records.map((x) => x.ev),
    ["hello", "cmd"],
    "the whole lines written before the kill",
  );
  await t.rejects(runUverbs(scriptedGuest({ hang: partial }), ["sleep ms=30000"], { timeoutMs: 50 }), {
    message: /did not finish in \d+ ms and was killed \(pid 81, S \(sleeping\)\)/,
    detail: /do_nanosleep/,
  });
});
