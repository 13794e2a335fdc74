/**
 * A shell kept open in the guest for scripts run one after another. An SSH exec channel per script
 * costs a channel and a shell process started in the guest each time; through one open shell a
 * script's round trip is the script's own time (72 ms against 5 ms for a one-line script, 2 cores
 * under TCG, 2026-12-07). Each script runs in a subshell, so its `exit` and `cd` stay its own; its
 * stderr goes to a file the shell prints after it, between two lines that name the script.
 */
import { randomBytes } from "node:crypto";
import type { ExecStream } from "../../qemu/launch/ssh.ts";
import { HilError } from "../../util/errors.ts";

export interface StreamShell {
  execStream(command: string, opts?: { timeoutMs?: number }): Promise<ExecStream>;
}

export interface ScriptResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** An open shell gathers every byte it prints (ExecStream.stdout): past this, the next script opens another. */
const SESSION_STDOUT_LIMIT = 8 * 1024 * 1024;
/** How long a closing shell may take to end before it is killed. */
const CLOSE_WAIT_MS = 5000;

/** The parts of a script's output between `from` and its closing line, once that has come. */
export function scriptOutput(out: string, from: number, tag: string): ScriptResult | undefined {
  const status = out.indexOf(`\n${tag} `, from);
  if (status < 0) return undefined;
  const statusEnd = out.indexOf("\n", status + 1);
  const close = statusEnd < 0 ? -1 : out.indexOf(`\n${tag}\n`, statusEnd);
  if (close < 0) return undefined;
  return {
    stdout: out.slice(from, status),
    exitCode: Number.parseInt(out.slice(status + tag.length + 2, statusEnd), 10),
    stderr: out.slice(statusEnd + 1, close),
  };
}

/**
 * The text written to the open shell for one script: the script in a subshell, its stderr into
 * `errFile` and its stdin empty (as an exec's without input: a command that reads stdin must not
 * take the next script's text), then its status line, that stderr and the closing line. The
 * stderr is printed with the shell's own read and printf: a cat and an rm cost 30 ms more a script
 * in a TCG guest.
 */
export function scriptInput(script: string, tag: string, errFile: string): string {
  return [
    `(`,
    script,
    `) 2>${errFile} </dev/null`,
    `printf '\\n%s %d\\n' ${tag} $?`,
    `while IFS= read -r l || [ -n "$l" ]; do printf '%s\\n' "$l"; done <${errFile}`,
    `printf '\\n%s\\n' ${tag}`,
    "",
  ].join("\n");
}

/** Whether the session's channel closed within `ms` (a frozen guest never closes it). */
async function endsWithin(session: ExecStream, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    session.result.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return ended;
}

export class GuestShell {
  private session: ExecStream | undefined;
  /** the open shell's file for a script's stderr (the redirect empties it for each script) */
  private errFile = "";
  private last: Promise<unknown> = Promise.resolve();

  /**
   * `tmpDir`: where in the guest each open shell keeps its scripts' stderr (default /tmp).
   * `onLost`: called when the shell ends under a script, before that is thrown: the guest may say
   * why instead (a QEMU that died takes the shell's channel with it), by throwing its own error.
   */
  constructor(
    private readonly guest: StreamShell,
    private readonly tmpDir = "/tmp",
    private readonly onLost: () => Promise<void> = async () => {},
  ) {}

  /** Runs `script` after the ones before it; as an exec of it would, but through the open shell. */
  run(script: string, timeoutMs: number): Promise<ScriptResult> {
    const next = this.last.then(() => this.runNow(script, timeoutMs));
    this.last = next.catch(() => {});
    return next;
  }

  /**
   * Ends the open shell (EOF: it exits) and waits for its channel to close: the guest's dropbear
   * refuses an exec that comes while another channel is closing ("Unable to exec", 8 of 20 tries).
   */
  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    if (!session) return;
    session.end(`rm -f ${this.errFile}\n`);
    if (!(await endsWithin(session, CLOSE_WAIT_MS))) {
      session.kill();
      await endsWithin(session, CLOSE_WAIT_MS);
    }
  }

  private async open(): Promise<ExecStream> {
    if (this.session && this.session.stdout.length < SESSION_STDOUT_LIMIT) return this.session;
    await this.close();
    const session = await this.guest.execStream("exec sh");
    this.errFile = `${this.tmpDir}/hil-sh-${randomBytes(6).toString("hex")}.err`;
    session.result
      .catch(() => {})
      .finally(() => {
        if (this.session === session) this.session = undefined;
      });
    this.session = session;
    return session;
  }

  private async runNow(script: string, timeoutMs: number): Promise<ScriptResult> {
    const session = await this.open();
    const tag = `hil-sh-${randomBytes(6).toString("hex")}`;
    const from = session.stdout.length;
    let timer: NodeJS.Timeout | undefined;
    let off = () => {};
    const outcome = await new Promise<ScriptResult | "ended" | "timeout">((resolve) => {
      const check = () => {
        const r = scriptOutput(session.stdout, from, tag);
        if (r) resolve(r);
      };
      off = session.onStdout(check);
      session.result.then(
        () => resolve("ended"),
        () => resolve("ended"),
      );
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
      if (!session.write(scriptInput(script, tag, this.errFile))) resolve("ended");
      check();
    });
    clearTimeout(timer);
    off();
    if (typeof outcome === "object") return outcome;
    const seen = session.stdout.slice(from);
    if (this.session === session) this.session = undefined;
    session.kill();
    await endsWithin(session, CLOSE_WAIT_MS);
    if (outcome === "timeout")
      throw new HilError(`guest command timed out after ${timeoutMs} ms: ${script}`, {
        detail: seen ? `stdout:\n${seen}` : undefined,
      });
    await this.onLost();
    throw new HilError(`the guest's shell ended while it ran: ${script}`, {
      detail: seen ? `stdout:\n${seen}` : undefined,
    });
  }
}

/**
 * A GuestShell on a guest that can keep a shell open (undefined where it cannot). A shell lost
 * under a script asks the guest over another channel first: a dead QEMU is then named, as an
 * exec's failure names it.
 */
export function guestShellOf(
  guest: {
    execStream?: StreamShell["execStream"];
    exec(command: string, opts?: { timeoutMs?: number }): Promise<unknown>;
  },
  tmpDir = "/tmp",
): GuestShell | undefined {
  const { execStream } = guest;
  if (typeof execStream !== "function") return undefined;
  return new GuestShell({ execStream: execStream.bind(guest) }, tmpDir, async () => {
    await guest.exec("true", { timeoutMs: 10_000 });
  });
}
