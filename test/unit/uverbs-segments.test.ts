// The userspace executor's input in segments, without a guest: runUverbsSegments against a fake
// streaming hil-uverbs (-s) that runs each line as it reads it. Between two segments the driver
// waits for the "done" record of every command sent so far and calls back with the trace so far;
// the next segment is written only after the callback returns; a hang, a rejected line, the
// watchdog's kill or a throwing callback stops the input. Then the user executor cutting a
// compiled scenario at its fault steps and arming each fault with the records so far.
import { setTimeout as sleep } from "node:timers/promises";
import t from "tap";
import { UserExecutor, userLines, userSegments } from "../../harness/executor/user.ts";
import {
  commandCount,
  runUverbs,
  runUverbsSegments,
  UVERBS_EXIT,
  type UverbsRunOptions,
} from "../../harness/executor/uverbs-driver.ts";
import type { TraceRecord } from "../../harness/protocol/trace.ts";
import { compileScenario } from "../../harness/scenario/compile.ts";
import { parseScenario } from "../../harness/scenario/load.ts";
import type { ExecOptions, ExecResult, ExecStream } from "../../qemu/launch/ssh.ts";

/**
 * A fake `hil-uverbs -s`: reads lines as they are written, runs each command (split at ';', blank
 * parts and '#' comments skipped) between a cmd and a done record, a tick or more apart. `sleep
 * ms=N` takes N ms; `stuck` never finishes (until killed); `drain ... hang` writes a hang record
 * and ends the run (exit 3); `bogus` is rejected (exit 2). EOF ends it once every line ran.
 */
class FakeUverbs implements ExecStream {
  stdout = "";
  /** what was written to stdin, one entry a write */
  readonly writes: string[] = [];
  /** the number of writes when stdin was closed */
  eofAfter: number | undefined;
  readonly result: Promise<ExecResult>;
  private readonly listeners = new Set<(chunk: string) => void>();
  private readonly queue: string[] = [];
  private partial = "";
  private seq = 0;
  private ids = 0;
  private status = 0;
  private exited = false;
  private wake: (() => void) | undefined;
  private settle!: (r: ExecResult) => void;
  private killed!: () => void;
  private readonly killedP: Promise<void>;

  constructor(
    readonly command: string,
    /** operations whose done record has rc -111 */
    private readonly failing: readonly string[] = [],
  ) {
    this.result = new Promise((resolve) => {
      this.settle = resolve;
    });
    this.killedP = new Promise((resolve) => {
      this.killed = resolve;
    });
    this.emit({ ev: "hello", version: 1, release: "6.12.95", pid: 81 });
    void this.loop();
  }

  write(data: string | Uint8Array): boolean {
    if (this.eofAfter !== undefined || this.exited) return false;
    const text = String(data);
    this.writes.push(text);
    this.partial += text;
    const lines = this.partial.split("\n");
    this.partial = lines.pop() ?? "";
    this.queue.push(...lines);
    this.wake?.();
    return true;
  }

  end(data?: string | Uint8Array): void {
    if (this.eofAfter !== undefined) return;
    if (data !== undefined && String(data) !== "") this.write(data);
    this.eofAfter = this.writes.length;
    this.wake?.();
  }

  onStdout(listener: (chunk: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  kill(): void {
    this.exit(137, "KILL");
  }

  private emit(rec: Record<string, unknown>): void {
    if (this.exited) return;
    const line = `${JSON.stringify({ seq: this.seq, ns: this.seq + 1, ...rec })}\n`;
    this.seq++;
    this.stdout += line;
    for (const l of [...this.listeners]) l(line);
  }

  private exit(exitCode: number, signal?: string): void {
    if (this.exited) return;
    this.exited = true;
    this.killed();
    this.settle({ exitCode, stdout: this.stdout, stderr: "", ...(signal ? { signal } : {}) });
  }

  private async loop(): Promise<void> {
    while (!this.exited) {
      const line = this.queue.shift();
      if (line === undefined) {
        if (this.eofAfter !== undefined) return this.exit(this.status);
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      for (const part of line.split(";")) {
        const text = part.trim();
        if (!text || text.startsWith("#")) continue;
        const op = text.split(" ")[0] ?? "";
        if (op === "bogus") {
          this.emit({ ev: "reject", line: text, why: "line 1: unknown operation" });
          return this.exit(UVERBS_EXIT.rejected);
        }
        const id = ++this.ids;
        this.emit({ ev: "cmd", id, line: text });
        await new Promise((resolve) => setImmediate(resolve));
        if (op === "stuck") await this.killedP;
        if (op === "sleep") await sleep(Number(/ms=(\d+)/.exec(text)?.[1] ?? 0));
        if (this.exited) return;
        if (op === "drain" && text.includes("hang")) {
          this.emit({
            ev: "hang",
            call: id,
            qp: "qp",
            op: "drain",
            which: "qp",
            queue: "sq",
            cq: "cq",
            waited_ms: 3000,
          });
          this.emit({ ev: "done", id, op, rc: -110, us: 3000000, err: "a hang" });
          return this.exit(UVERBS_EXIT.hang);
        }
        if (this.failing.includes(op)) this.emit({ ev: "done", id, op, rc: -111, us: 1, err: "refused" });
        else this.emit({ ev: "done", id, op, rc: 0, us: 1 });
      }
    }
  }
}

/** A guest that starts FakeUverbs for streamed commands and answers the watchdog's evidence script. */
function fakeGuest(failing: readonly string[] = []) {
  const calls: string[] = [];
  const procs: FakeUverbs[] = [];
  return {
    calls,
    procs,
    async exec(command: string, _opts?: ExecOptions): Promise<ExecResult> {
      calls.push(command);
      if (command.includes("kill -KILL $pid")) {
        procs.at(-1)?.kill();
        return {
          exitCode: 0,
          stdout: "pid 81\nstate S (sleeping)\nwchan do_nanosleep\nstack\n[<0>] do_nanosleep+0x6d/0x1a0\n",
          stderr: "",
        };
      }
      return { exitCode: 0, stdout: "/usr/bin/hil-uverbs\n", stderr: "" };
    },
    async execStream(command: string): Promise<ExecStream> {
      calls.push(command);
      const p = new FakeUverbs(command, failing);
      procs.push(p);
      return p;
    },
  };
}

const evs = (records: readonly { ev: string }[]) => records.map((r) => r.ev);

t.test("commandCount: what hil-uverbs runs of the lines", async (t) => {
  t.equal(commandCount(["sleep ms=1", "pd name=a"]), 2);
  t.equal(commandCount(["sleep ms=1; sleep ms=2", "  # a comment", "", " ; ;"]), 2, "';' parts, blanks");
  t.equal(commandCount(["# only a comment; sleep ms=1"]), 1, "a comment ends at ';' (main.c)");
});

t.test("segments: each is written once the ones before are done and the callback returned", async (t) => {
  const g = fakeGuest();
  const seen: Array<{ segment: number; writes: number; dones: number[]; lastEv?: string }> = [];
  const run = await runUverbsSegments(
    g,
    [["sleep ms=1", "sleep ms=30; sleep ms=1"], ["sleep ms=2"], [], ["sleep ms=3"]],
    async ({ segment, trace }) => {
      const p = g.procs[0];
      seen.push({
        segment,
        writes: p?.writes.length ?? -1,
        dones: trace.records.flatMap((r) => (r.ev === "done" ? [r.id] : [])),
        lastEv: trace.records.at(-1)?.ev,
      });
      await sleep(20);
    },
  );
  const p = g.procs[0];
  t.match(g.calls[0], /hil-uverbs -w 10000 -s'/, "the streaming program");
  t.same(
    seen,
    [
      { segment: 0, writes: 1, dones: [1, 2, 3], lastEv: "done" },
      { segment: 1, writes: 2, dones: [1, 2, 3, 4], lastEv: "done" },
      { segment: 2, writes: 2, dones: [1, 2, 3, 4], lastEv: "done" },
    ],
    "after every command sent so far is done (';' parts too), before the next segment is written",
  );
  t.same(
    p?.writes,
    ["sleep ms=1\nsleep ms=30; sleep ms=1\n", "sleep ms=2\n", "sleep ms=3\n"],
    "an empty segment writes nothing",
  );
  t.equal(p?.eofAfter, 3, "EOF with the last segment");
  t.same(
    run.done.map((d) => d.id),
    [1, 2, 3, 4, 5],
  );
  t.equal(run.exitCode, 0);
  t.equal(run.interrupted, undefined);
  t.equal(g.calls.filter((c) => c.includes("kill")).length, 0, "the watchdog stayed quiet");
});

/** Runs the segments on a fake guest, counting the calls of the callback between segments. */
async function runCounted(segments: string[][], opts?: UverbsRunOptions) {
  const g = fakeGuest();
  let called = 0;
  const run = await runUverbsSegments(
    g,
    segments,
    () => {
      called++;
    },
    opts,
  );
  return { g, run, called };
}

t.test("one segment: all lines, then EOF, no callback", async (t) => {
  const { g, run, called } = await runCounted([["sleep ms=1", "sleep ms=1"]]);
  t.equal(called, 0);
  t.same(g.procs[0]?.writes, ["sleep ms=1\nsleep ms=1\n"]);
  t.equal(run.done.length, 2);
});

t.test("a throwing callback stops the input: EOF, the run says where it stopped", async (t) => {
  const g = fakeGuest();
  const run = await runUverbsSegments(
    g,
    [["sleep ms=1"], ["sleep ms=2"]],
    () => {
      throw new Error("the device refused fault {}");
    },
    { check: false },
  );
  t.same(g.procs[0]?.writes, ["sleep ms=1\n"], "the next segment is never written");
  t.equal(g.procs[0]?.eofAfter, 1, "stdin closed after the first segment");
  t.same(run.interrupted, { segment: 0, error: "the device refused fault {}" });
  t.same(
    run.done.map((d) => d.op),
    ["sleep"],
  );
  await t.rejects(
    runUverbsSegments(fakeGuest(), [["sleep ms=1"], ["sleep ms=2"]], () => {
      throw new Error("no qp_num for qp");
    }),
    { message: /the input stopped after segment 1: no qp_num for qp/ },
  );
});

t.test("a drain that hangs ends the run: no callback, nothing more written", async (t) => {
  const { g, run, called } = await runCounted([["sleep ms=1", "drain qp=qp hang"], ["sleep ms=2"]], {
    check: false,
  });
  t.equal(called, 0, "the callback is not called for a run that ended");
  t.same(g.procs[0]?.writes, ["sleep ms=1\ndrain qp=qp hang\n"]);
  t.equal(run.exitCode, UVERBS_EXIT.hang);
  t.equal(run.hang?.waited_ms, 3000);
});

t.test("a rejected line ends the run", async (t) => {
  const { g, run, called } = await runCounted([["sleep ms=1", "bogus x=1"], ["sleep ms=2"]], {
    check: false,
  });
  t.equal(called, 0);
  t.equal(run.exitCode, UVERBS_EXIT.rejected);
  t.same(g.procs[0]?.writes.length, 1);
  await t.rejects(
    runUverbsSegments(fakeGuest(), [["bogus"], ["sleep ms=1"]], () => {}),
    {
      message: /refused the input/,
    },
  );
});

t.test("a stuck command: the watchdog collects its stack and kills it", async (t) => {
  const { g, run, called } = await runCounted([["sleep ms=1", "stuck"], ["sleep ms=2"]], {
    timeoutMs: 100,
    check: false,
  });
  t.equal(called, 0);
  t.match(run.killed, { pid: 81, state: "S (sleeping)", stack: "[<0>] do_nanosleep+0x6d/0x1a0" });
  t.ok((run.killed?.afterMs ?? 0) >= 100, "after the timeout");
  t.match(
    g.calls.find((c) => c.includes("kill -KILL")),
    /cat '\/tmp\/hil-uverbs-[0-9a-f]{12}\.pid'/,
    "by the pid file the streaming command wrote",
  );
  t.same(evs(run.records), ["hello", "cmd", "done", "cmd"], "what it wrote before the kill");
  t.equal(run.exitCode, 137);
  await t.rejects(
    runUverbsSegments(fakeGuest(), [["stuck"], ["sleep ms=1"]], () => {}, { timeoutMs: 50 }),
    { message: /did not finish in \d+ ms and was killed/ },
  );
});

t.test("bad lines are refused before anything starts", async (t) => {
  const g = fakeGuest();
  await t.rejects(
    runUverbsSegments(g, [["sleep ms=1"], ["pd name=a\nreset"]], () => {}),
    { message: /not a hil-uverbs command line/ },
  );
  t.same(g.calls, [], "no process was started");
});

t.test("runUverbs with plain lines still writes them all at once, without streaming", async (t) => {
  const calls: Array<{ command: string; opts?: ExecOptions }> = [];
  const guest = {
    async exec(command: string, opts?: ExecOptions): Promise<ExecResult> {
      calls.push({ command, ...(opts ? { opts } : {}) });
      return {
        exitCode: 0,
        stdout: `${JSON.stringify({ seq: 0, ns: 1, ev: "hello", version: 1, release: "x", pid: 1 })}\n`,
        stderr: "",
      };
    },
  };
  await runUverbs(guest, ["sleep ms=1", "sleep ms=2"]);
  t.equal(calls[0]?.opts?.input, "sleep ms=1\nsleep ms=2\n");
  t.notMatch(calls[0]?.command, / -s'/);
});

const FAULTS = parseScenario(
  [
    "description: d",
    "covers: [5]",
    "drivers: [erdma]",
    "steps:",
    "  - post_recv: { count: 8 }",
    "  - fault: { kind: drop-cqe, queue: rq, wr_id: 2003 }",
    "  - fault: { kind: duplicate-cqe, queue: rq, wr_id: 2004 }",
    "  - drain: { which: qp }",
  ].join("\n"),
  "f.yaml",
);
const OPTS = { addr: "10.0.2.15", port: 7700 };

t.test("the user executor cuts a scenario at its fault steps", async (t) => {
  const c = compileScenario(FAULTS, OPTS);
  const { segments, faults } = userSegments(c);
  t.same(
    faults.map((f) => f.fault?.kind),
    ["drop-cqe", "duplicate-cqe"],
  );
  t.equal(segments.length, 3);
  t.ok(segments[0]?.at(-1)?.startsWith("post_recv qp=qp wr_id=2000 count=8"), "setup and the post first");
  t.same(segments[1], [], "nothing between the two faults");
  t.ok(segments[2]?.[0]?.startsWith("drain qp=qp"), "the drain after them");
  t.same(segments.flat(), userLines(c), "the same lines as in one go");
});

t.test("the user executor arms each fault with the records so far", async (t) => {
  const c = compileScenario(FAULTS, OPTS);
  const g = fakeGuest();
  const exec = await UserExecutor.load(g);
  const armed: Array<{ step: number; lastLine?: string; written: number }> = [];
  const outcome = await exec.runScenario(c, {
    fault: async (step, records: readonly TraceRecord[]) => {
      const cmds = records.flatMap((r) => (r.ev === "cmd" ? [r.line] : []));
      armed.push({ step: step.index, lastLine: cmds.at(-1), written: g.procs[0]?.writes.length ?? -1 });
    },
  });
  t.equal(outcome.error, undefined);
  t.same(
    armed.map((a) => [a.step, a.written]),
    [
      [1, 1],
      [2, 1],
    ],
    "both faults armed before the drain's segment was written",
  );
  t.match(armed[0]?.lastLine, /^post_recv qp=qp wr_id=2000/, "the post before the fault had run");
  t.match(g.procs[0]?.writes[1], /^drain qp=qp/);
  t.equal(outcome.records.filter((r) => r.ev === "done").length, userLines(c).length, "every command ran");

  const failing = await (await UserExecutor.load(fakeGuest())).runScenario(c, {
    fault: async () => {
      throw new Error("the device refused fault {}");
    },
  });
  t.equal(
    failing.error,
    "step 2 (line 6): fault drop-cqe: the device refused fault {}",
    "a fault that cannot be armed: the scenario is an error, as in the stepwise runner",
  );
  t.ok(
    failing.records.some((r) => r.ev === "cmd" && r.line.startsWith("post_recv")),
    "with the records so far",
  );
  t.notOk(
    failing.records.some((r) => r.ev === "cmd" && r.line.startsWith("drain")),
    "and nothing after the fault",
  );

  const broken = fakeGuest(["connect"]);
  let armedOnBroken = 0;
  const brokenSetup = await (await UserExecutor.load(broken)).runScenario(c, {
    fault: async () => {
      armedOnBroken++;
    },
  });
  t.equal(brokenSetup.error, "setup failed: connect: rc -111 (refused)", "as the stepwise runner says it");
  t.equal(armedOnBroken, 0, "no fault armed on a broken setup");
  t.same(broken.procs[0]?.writes.length, 1, "and nothing more sent");

  const none = await exec.runScenario(c);
  t.match(none.error, /^step 2 \(line 6\): fault drop-cqe: nothing here arms device faults/);
  const plain = { exec: g.exec };
  const noStream = await (await UserExecutor.load(plain)).runScenario(c, { fault: async () => {} });
  t.match(noStream.error, /no streaming exec/);
});
