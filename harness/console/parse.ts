/**
 * Kernel console lines that mean something went wrong, found by a table of patterns, with what
 * the report around them says: the stack frames, the process, a WARN's location and message.
 * The formats are the real ones of Linux 6.1 and 6.12 (test/fixtures/console/ holds captured logs:
 * 6.12 adds "UID:" to the CPU line; without frame pointers every frame is printed "? ").
 * parseBlockedTasks reads sysrq-w dumps, which are evidence the harness asks for, not a problem.
 */
/** "freeze": never parsed from the console; the harness's own finding (suite/freeze.ts) */
export type ConsoleEventKind =
  | "warn"
  | "bug"
  | "oops"
  | "panic"
  | "hung-task"
  | "lockdep"
  | "kasan"
  | "kfence"
  | "sleep-in-atomic"
  | "rcu-stall"
  | "freeze";

/** One line of a call trace: `[? ]fn+0xoff/0xsize [module]`. */
export interface StackFrame {
  fn: string;
  offset: number;
  size: number;
  module?: string;
  /**
   * false for the "? " frames: text addresses found on the stack that the unwinder did not walk
   * (with ORC, as the harness builds kernels, only stale ones; the guess unwinder marks every frame)
   */
  reliable: boolean;
}

export interface ConsoleProcess {
  comm: string;
  pid: number;
}

export interface ConsoleEvent {
  kind: ConsoleEventKind;
  /** 1-based line number in the console log */
  line: number;
  /** the last line of the report that belongs to it (1-based) */
  endLine: number;
  text: string;
  /** the Call Trace lines that follow, if any */
  trace: string[];
  /** the trace lines that are stack frames, parsed */
  frames: StackFrame[];
  /** the task the report is about (hung task, or the CPU/Comm line of a WARN, BUG or oops) */
  process?: ConsoleProcess;
  /** a WARN's source location, "file:line" */
  at?: string;
  /** the instruction the report points at: a WARN's function, or the RIP line's */
  rip?: string;
  /** a WARN's own message: the lines between "cut here" and "WARNING:" (WARN_ONCE's format) */
  message?: string;
  /** a KASAN or KFENCE report's other stacks: where the object was allocated and freed */
  memoryStacks?: MemoryStack[];
}

/** A titled stack of a memory-safety report: "Allocated by task 97:", "freed by task 97 on cpu 0 at ...:". */
export interface MemoryStack {
  title: string;
  trace: string[];
}

/** A task in D state listed by sysrq-w ("Show Blocked State"). */
export interface BlockedTask {
  line: number;
  process: ConsoleProcess;
  state: string;
  trace: string[];
  frames: StackFrame[];
}

/** The first row that matches a line gives its kind: the checkers' BUG lines before the generic one. */
const PATTERNS: ReadonlyArray<{ kind: ConsoleEventKind; re: RegExp }> = [
  // mm/kasan/report.c print_error_description, mm/kfence/report.c kfence_report_error
  { kind: "kasan", re: /\bBUG: KASAN: / },
  { kind: "kfence", re: /\bBUG: KFENCE: / },
  // kernel/sched/core.c __might_resched and __schedule_bug
  {
    kind: "sleep-in-atomic",
    re: /\bBUG: (sleeping function called from invalid context|scheduling while atomic)\b/,
  },
  { kind: "warn", re: /\bWARNING: CPU: \d+ PID: \d+ at \S+/ },
  { kind: "warn", re: /\bWARNING: .* at [\w.]+\+0x[0-9a-f]+\/0x[0-9a-f]+/ },
  { kind: "bug", re: /\bBUG: / },
  { kind: "bug", re: /\bkernel BUG at / },
  { kind: "oops", re: /\bOops: / },
  { kind: "oops", re: /\bgeneral protection fault\b/ },
  { kind: "panic", re: /\bKernel panic - not syncing\b/ },
  { kind: "hung-task", re: /\bINFO: task \S+ blocked for more than \d+ seconds/ },
  { kind: "lockdep", re: /\bWARNING: possible (circular|recursive) locking dependency/ },
  { kind: "rcu-stall", re: /\brcu: INFO: rcu_\w+ (self-)?detected stall/ },
];

const TIMESTAMP = /^\[\s*\d+\.\d+\]\s?/;
const FRAME = /^(\? )?([\w.$]+)\+0x([0-9a-f]+)\/0x([0-9a-f]+)(?: \[([\w-]+)\])?/;
const CPU_LINE = /\bCPU: \d+ (?:UID: \d+ )?PID: (\d+) Comm: (\S+)/;
const HUNG = /\bINFO: task (.+):(\d+) blocked for more than/;
const TASK_LINE = /^task:(\S+)\s+state:(\S+)\s.*?\bpid:\s*(\d+)/;
const WARN_AT = /\bWARNING: CPU: \d+ PID: \d+ at (\S+) (\S+\+0x[0-9a-f]+\/0x[0-9a-f]+(?: \[[\w-]+\])?)/;
const RIP = /^RIP: [0-9a-f]{4}:(\S+\+0x[0-9a-f]+\/0x[0-9a-f]+(?: \[[\w-]+\])?)/;
const CUT_HERE = /-+\[ cut here \]-+/;
/**
 * What x86 prints after a report's stack and still belongs to it: an Oops's module list and CR2,
 * the end markers, and the kernel offset a panic prints (its panic notifier in
 * arch/x86/kernel/setup.c).
 */
const TRAILER = /^(Modules linked in:|CR2: |Kernel Offset: |---\[ end (trace|Kernel panic))/;

function stripTimestamp(line: string): string {
  return line.replace(TIMESTAMP, "");
}

function classify(line: string): ConsoleEventKind | undefined {
  const text = stripTimestamp(line);
  // lockdep's header also matches the generic WARNING pattern; the more specific row wins.
  const lockdep = PATTERNS.find((p) => p.kind === "lockdep" && p.re.test(text));
  if (lockdep) return "lockdep";
  return PATTERNS.find((p) => p.re.test(text))?.kind;
}

/** A call trace line as a frame, or undefined when it is not one (registers, markers). */
export function parseFrame(line: string): StackFrame | undefined {
  const m = FRAME.exec(line.trim());
  if (!m) return undefined;
  const frame: StackFrame = {
    fn: m[2] as string,
    offset: Number.parseInt(m[3] as string, 16),
    size: Number.parseInt(m[4] as string, 16),
    reliable: m[1] === undefined,
  };
  if (m[5]) frame.module = m[5];
  return frame;
}

function framesOf(trace: readonly string[]): StackFrame[] {
  return trace.map(parseFrame).filter((f): f is StackFrame => f !== undefined);
}

/** A stack's begin or end in a trace: <IRQ>, </IRQ>, <NMI>, <SOFTIRQ>, <#DF>, <TASK>, ... */
const STACK_MARK = /^\s*<\/?[A-Z#_]+>\s*$/;
/**
 * The lines of a register dump (arch/x86/kernel/process_64.c __show_regs and show_ip), which
 * ORC's unwinder prints in the middle of a trace where it crosses into an interrupted context.
 */
const REGISTER_LINE = /^(RIP|Code|RSP|RAX|RDX|RBP|R10|R13|FS|CS|CR2|DR0|DR3|PKRU):/;

/**
 * The Call Trace after line `from` (0-based), up to </TASK>: its lines, and where the report ends
 * (the trace's end and the trailer lines after it).
 */
function readTrace(lines: readonly string[], from: number, window = 80): { trace: string[]; end: number } {
  const trace: string[] = [];
  let inTrace = false;
  let end = from;
  for (let j = from + 1; j < lines.length && j < from + window; j++) {
    const text = stripTimestamp(lines[j] ?? "");
    if (/^\s*Call Trace:/.test(text)) {
      inTrace = true;
      end = j;
      continue;
    }
    if (!inTrace) {
      if (classify(lines[j] ?? "") || /^\s*sysrq: /.test(text)) break;
      continue;
    }
    if (STACK_MARK.test(text)) {
      end = j;
      if (text.includes("</TASK>")) break;
      continue;
    }
    // the registers of a context the trace walks into (an interrupt's, an NMI's): its RIP says
    // where that context was; the walk goes on below them
    if (REGISTER_LINE.test(text)) {
      if (/^RIP: /.test(text)) trace.push(text.trim());
      end = j;
      continue;
    }
    if (/---\[ end trace/.test(text) || !/^\s+\S/.test(text)) break;
    trace.push(text.trim());
    end = j;
  }
  while (TRAILER.test(stripTimestamp(lines[end + 1] ?? ""))) end++;
  return { trace, end };
}

function processOf(
  kind: ConsoleEventKind,
  lines: readonly string[],
  i: number,
  end: number,
): ConsoleProcess | undefined {
  const first = stripTimestamp(lines[i] ?? "");
  if (kind === "hung-task") {
    const m = HUNG.exec(first);
    if (m) return { comm: m[1] as string, pid: Number(m[2]) };
  }
  for (let j = i; j <= end; j++) {
    const m = CPU_LINE.exec(stripTimestamp(lines[j] ?? ""));
    if (m) return { comm: m[2] as string, pid: Number(m[1]) };
    const t = TASK_LINE.exec(stripTimestamp(lines[j] ?? "").trim());
    if (t) return { comm: t[1] as string, pid: Number(t[3]) };
  }
  return undefined;
}

/** The line of "=" that opens and closes a KASAN or KFENCE report (mm/kasan/report.c, mm/kfence/report.c). */
const REPORT_RULE = /^={20,}$/;
const MEMORY_STACK_TITLE =
  /^((Allocated|Freed|allocated|freed) by task \d+\b.*|(Last|Second to last) potentially related work creation):$/;
/** KFENCE's line before the access stack, which it prints without a "Call Trace:" (mm/kfence/report.c). */
const KFENCE_ACCESS = /^(Out-of-bounds|Use-after-free|Invalid) (read|write|free) (at|of) 0x[0-9a-f]+\b.*:$/;

/**
 * A KASAN or KFENCE report from its BUG line to its closing rule: the access stack (KASAN's Call
 * Trace, KFENCE's stack after its access line) and the allocation and free stacks.
 */
function readMemoryReport(
  lines: readonly string[],
  i: number,
  kind: "kasan" | "kfence",
): { trace: string[]; stacks: MemoryStack[]; end: number } {
  const access = kind === "kasan" ? readTrace(lines, i) : { trace: [], end: i };
  const trace = [...access.trace];
  const stacks: MemoryStack[] = [];
  let end = access.end;
  let block: string[] | undefined;
  for (let j = access.end + 1; j < lines.length && j < i + 300; j++) {
    const text = stripTimestamp(lines[j] ?? "");
    if (REPORT_RULE.test(text.trim())) {
      end = j;
      break;
    }
    const title = MEMORY_STACK_TITLE.exec(text.trim());
    if (title) {
      block = [];
      stacks.push({ title: text.trim(), trace: block });
    } else if (kind === "kfence" && trace.length === 0 && KFENCE_ACCESS.test(text.trim())) block = trace;
    else if (block && /^\s+\S/.test(text) && parseFrame(text)) block.push(text.trim());
    else block = undefined;
    end = j;
  }
  return { trace, stacks, end };
}

/** A WARN's message: what WARN()/WARN_ONCE() printed between "cut here" and the WARNING line. */
function warnMessage(lines: readonly string[], i: number): string | undefined {
  for (let j = i - 1; j >= 0 && j >= i - 12; j--) {
    if (CUT_HERE.test(lines[j] ?? "")) {
      const msg = lines
        .slice(j + 1, i)
        .map((l) => stripTimestamp(l).trim())
        .filter(Boolean);
      return msg.length ? msg.join("\n") : undefined;
    }
  }
  return undefined;
}

/** Finds every event in a console log, with the call trace that follows it (up to its end marker). */
export function parseConsole(log: string): ConsoleEvent[] {
  const lines = log.split(/\r?\n/);
  const events: ConsoleEvent[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    const kind = classify(raw);
    if (!kind) continue;
    const memory = kind === "kasan" || kind === "kfence" ? readMemoryReport(lines, i, kind) : undefined;
    // lockdep describes the dependency chain (a stack per lock) before its "stack backtrace:"
    const { trace, end } = memory ?? readTrace(lines, i, kind === "lockdep" ? 400 : 80);
    const text = stripTimestamp(raw).trim();
    const event: ConsoleEvent = { kind, line: i + 1, endLine: end + 1, text, trace, frames: framesOf(trace) };
    if (memory && memory.stacks.length > 0) event.memoryStacks = memory.stacks;
    const process = processOf(kind, lines, i, end);
    if (process) event.process = process;
    const warnAt = WARN_AT.exec(text);
    if (warnAt) {
      event.at = warnAt[1] as string;
      event.rip = warnAt[2] as string;
    }
    for (let j = i + 1; j <= end && !event.rip; j++) {
      const rip = RIP.exec(stripTimestamp(lines[j] ?? "").trim());
      if (rip) event.rip = rip[1] as string;
    }
    if (kind === "warn") {
      const message = warnMessage(lines, i);
      if (message) event.message = message;
    }
    events.push(event);
  }
  return events;
}

/** The tasks sysrq-w listed after each "sysrq: Show Blocked State", with their stacks. */
export function parseBlockedTasks(log: string): BlockedTask[] {
  const lines = log.split(/\r?\n/);
  const tasks: BlockedTask[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/\bsysrq: Show Blocked State/.test(lines[i] ?? "")) continue;
    let j = i + 1;
    for (;;) {
      const text = stripTimestamp(lines[j] ?? "").trim();
      const t = TASK_LINE.exec(text);
      if (!t) break;
      const { trace, end } = readTrace(lines, j);
      tasks.push({
        line: j + 1,
        process: { comm: t[1] as string, pid: Number(t[3]) },
        state: t[2] as string,
        trace,
        frames: framesOf(trace),
      });
      j = end + 1;
    }
    i = j - 1;
  }
  return tasks;
}
