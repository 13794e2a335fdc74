/**
 * Reads what a LAVA job brought back: the runner's tagged console lines (runner.ts), from the job's
 * log as LAVA keeps it (log.yaml: a list of { dt, lvl, msg }) or as plain text (the console, or
 * `lavacli jobs logs --raw`). Untagged lines are other console output and are ignored. Each
 * scenario's batches are checked against the digests the runner printed, so a line the console
 * mangled makes that scenario unreadable rather than wrongly judged.
 */
import { createHash } from "node:crypto";
import { parse as parseYaml } from "yaml";
import { HilError } from "../../util/errors.ts";
import { LAVA_TAG } from "./runner.ts";

export interface LavaScenarioOutput {
  name: string;
  /** the batches' output as the guest printed it (b undefined when it did not run) */
  a: string;
  b?: string;
  aRc?: number;
  bRc?: number;
  stack: string[];
  state?: string;
  dmesg: string;
  /** set when the output is incomplete or does not match its digests */
  damaged?: string;
}

export interface LavaResults {
  digest?: string;
  scenarios: Map<string, LavaScenarioOutput>;
  notRun: Map<string, string>;
  /** the runner printed its last line */
  done: boolean;
}

/** The levels of LAVA's log entries that carry the device's console output. */
const CONSOLE_LEVELS = new Set(["target", "feedback"]);

/**
 * A console line as the device printed it, from LAVA's log of it: LAVA's ShellLogger
 * (lava_dispatcher/shell.py, 2023.01) writes every `"` of the console as `\"` (and drops carriage
 * returns and escape characters), so each backslash it put before a quote is taken out again.
 */
export function unescapeLavaConsole(msg: string): string {
  return msg.replace(/\\"/g, '"');
}

interface LogEntry {
  lvl?: unknown;
  msg?: unknown;
}

function entryLines(entry: unknown, consoleOnly = false): string[] {
  if (!entry || typeof entry !== "object") return [];
  const { lvl, msg } = entry as LogEntry;
  if (typeof msg !== "string") return [];
  const console = typeof lvl === "string" && CONSOLE_LEVELS.has(lvl);
  if (consoleOnly && !console) return [];
  return (console ? unescapeLavaConsole(msg) : msg).split("\n");
}

/**
 * lava-run's own output: one log entry a line, each a YAML flow mapping ({"dt": ..., "lvl": ...,
 * "msg": ...}, lava_common/log.py dump: double-quoted, so mostly JSON, but with YAML's escapes and
 * tags); a line that is not one is taken as it is.
 */
export function flowLogLines(text: string, opts: { consoleOnly?: boolean } = {}): string[] {
  return text.split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return opts.consoleOnly ? [] : [line];
    try {
      return entryLines(parseYaml(line), opts.consoleOnly);
    } catch {
      return opts.consoleOnly ? [] : [line];
    }
  });
}

/**
 * The console lines of a log: LAVA's log.yaml entries' messages, lava-run's output (a mapping a line),
 * or the text's lines (the console as it came).
 */
export function logLines(text: string, where: string): string[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{"dt":')) return flowLogLines(text);
  if (trimmed.startsWith("- {") || trimmed.startsWith("- dt:")) {
    let entries: unknown;
    try {
      entries = parseYaml(text);
    } catch (err) {
      throw new HilError(
        `${where}: not a LAVA log (YAML): ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    if (!Array.isArray(entries)) throw new HilError(`${where}: a LAVA log is a list of { dt, lvl, msg }`);
    return entries.flatMap((e) => entryLines(e));
  }
  return text.split("\n");
}

function md5(lines: readonly string[]): string {
  return createHash("md5")
    .update(`${lines.join("\n")}\n`)
    .digest("hex");
}

interface Open {
  name: string;
  a: string[];
  b: string[];
  aRc?: number;
  bRc?: number;
  stack: string[];
  state?: string;
  dmesg: string[];
}

function closeScenario(o: Open, sums: readonly string[] | undefined): LavaScenarioOutput {
  const out: LavaScenarioOutput = {
    name: o.name,
    a: `${o.a.join("\n")}\n`,
    ...(o.b.length > 0 ? { b: `${o.b.join("\n")}\n` } : {}),
    ...(o.aRc !== undefined ? { aRc: o.aRc } : {}),
    ...(o.bRc !== undefined ? { bRc: o.bRc } : {}),
    stack: o.stack,
    ...(o.state !== undefined ? { state: o.state } : {}),
    dmesg: o.dmesg.length > 0 ? `${o.dmesg.join("\n")}\n` : "",
  };
  if (!sums)
    return { ...out, damaged: "its output stops before the runner's end line (the job ended early?)" };
  if (md5(o.a) !== sums[0])
    return { ...out, damaged: "the log does not hold its first batch's output as printed (digest differs)" };
  if (o.b.length > 0 && md5(o.b) !== sums[1])
    return { ...out, damaged: "the log does not hold its second batch's output as printed (digest differs)" };
  return out;
}

export function parseLavaResults(text: string, where: string): LavaResults {
  const results: LavaResults = { scenarios: new Map(), notRun: new Map(), done: false };
  let open: Open | undefined;
  const prefix = `${LAVA_TAG} `;
  for (const raw of logLines(text, where)) {
    const line = raw.replace(/\r$/, "");
    const at = line.indexOf(LAVA_TAG);
    if (at < 0) continue;
    const tagged = line.slice(at);
    if (tagged !== LAVA_TAG && !tagged.startsWith(prefix)) continue;
    const body = tagged.slice(prefix.length);
    const space = body.indexOf(" ");
    const kind = space < 0 ? body : body.slice(0, space);
    const rest = space < 0 ? "" : body.slice(space + 1);
    switch (kind) {
      case "plan":
        results.digest = rest.split(" ")[0];
        break;
      case "begin":
        if (open) results.scenarios.set(open.name, closeScenario(open, undefined));
        open = { name: rest, a: [], b: [], stack: [], dmesg: [] };
        break;
      case "a":
        open?.a.push(rest);
        break;
      case "b":
        open?.b.push(rest);
        break;
      case "rc": {
        const [a, b] = rest.split(" ");
        if (open) {
          if (a !== undefined && /^-?\d+$/.test(a)) open.aRc = Number(a);
          if (b !== undefined && /^-?\d+$/.test(b)) open.bRc = Number(b);
        }
        break;
      }
      case "stack":
        open?.stack.push(rest);
        break;
      case "state":
        if (open) open.state = rest;
        break;
      case "dmesg":
        open?.dmesg.push(rest);
        break;
      case "end": {
        const [name, ...sums] = rest.split(" ");
        if (open && open.name === name) {
          results.scenarios.set(open.name, closeScenario(open, sums));
          open = undefined;
        }
        break;
      }
      case "notrun": {
        const sp = rest.indexOf(" ");
        results.notRun.set(sp < 0 ? rest : rest.slice(0, sp), sp < 0 ? "" : rest.slice(sp + 1));
        break;
      }
      case "done":
        results.done = true;
        break;
    }
  }
  if (open) results.scenarios.set(open.name, closeScenario(open, undefined));
  return results;
}
