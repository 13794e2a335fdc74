/** Kernel console lines that mean something went wrong, found by a table of patterns. */
export type ConsoleEventKind = "warn" | "bug" | "oops" | "panic" | "hung-task" | "lockdep" | "rcu-stall";

export interface ConsoleEvent {
  kind: ConsoleEventKind;
  /** 1-based line number in the console log */
  line: number;
  text: string;
  /** the Call Trace lines that follow, if any */
  trace: string[];
}

const PATTERNS: ReadonlyArray<{ kind: ConsoleEventKind; re: RegExp }> = [
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

/** Finds every event in a console log, with the call trace that follows it (up to its end marker). */
export function parseConsole(log: string): ConsoleEvent[] {
  const lines = log.split(/\r?\n/);
  const events: ConsoleEvent[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    const kind = classify(raw);
    if (!kind) continue;
    const trace: string[] = [];
    let inTrace = false;
    for (let j = i + 1; j < lines.length && j < i + 80; j++) {
      const text = stripTimestamp(lines[j] ?? "");
      if (/^\s*Call Trace:/.test(text)) {
        inTrace = true;
        continue;
      }
      if (!inTrace) {
        if (classify(lines[j] ?? "")) break;
        continue;
      }
      if (/^\s*<\/?(TASK|IRQ)>/.test(text)) {
        if (text.includes("</TASK>")) break;
        continue;
      }
      if (/---\[ end trace/.test(text) || !/^\s+\S/.test(text)) break;
      trace.push(text.trim());
    }
    events.push({ kind, line: i + 1, text: stripTimestamp(raw).trim(), trace });
  }
  return events;
}
