import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { pipeline } from "node:stream/promises";
import { StringDecoder } from "node:string_decoder";
import { setTimeout as sleep } from "node:timers/promises";
import ssh2, { type Client, type ClientChannel } from "ssh2";
import { HilError } from "../../util/errors.ts";
import type { CommandResult } from "./types.ts";

export interface SshKeyPair {
  /** OpenSSH private key (PEM-like "OPENSSH PRIVATE KEY") */
  privateKey: string;
  /** one OpenSSH public key line */
  publicKey: string;
}

/**
 * An ed25519 key pair in OpenSSH format. About 3 in 1000 pairs ssh2 generates cannot be parsed back
 * by ssh2 itself ("Malformed OpenSSH public key"; measured: 9 of 3000), which made the guest refuse
 * the client now and then; such pairs are drawn again.
 */
export function generateSshKeyPair(comment: string): SshKeyPair {
  for (let attempt = 0; attempt < 100; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519", { comment });
    if (
      !(ssh2.utils.parseKey(pair.private) instanceof Error) &&
      !(ssh2.utils.parseKey(pair.public) instanceof Error)
    ) {
      return { privateKey: pair.private, publicKey: pair.public };
    }
  }
  throw new Error("ssh2 generated 100 key pairs it cannot parse back");
}

export interface SshTarget {
  host: string;
  port: number;
  username: string;
  privateKey: string;
}

/** One SSH connection attempt; the guest is ours and on loopback, so any host key is accepted. */
export function connectOnce(target: SshTarget, readyTimeoutMs: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client = new ssh2.Client();
    let settled = false;
    // ssh2 may emit several errors for one failed attempt; the listener stays for all of them.
    client.on("error", (err: Error) => {
      if (settled) return;
      settled = true;
      client.end();
      reject(err);
    });
    client.once("ready", () => {
      settled = true;
      resolve(client);
    });
    client.connect({
      host: target.host,
      port: target.port,
      username: target.username,
      privateKey: target.privateKey,
      hostVerifier: () => true,
      readyTimeout: readyTimeoutMs,
      keepaliveInterval: 5000,
      keepaliveCountMax: 6,
    });
  });
}

/** Retries until a connection is ready or `deadline` (epoch ms) passes; `abort` stops early. */
export async function connectWithRetry(
  target: SshTarget,
  deadline: number,
  abort?: AbortSignal,
): Promise<{ client: Client; attempts: number; lastError?: Error }> {
  let attempts = 0;
  let lastError: Error | undefined;
  while (Date.now() < deadline && !abort?.aborted) {
    attempts++;
    try {
      const remaining = Math.max(1000, Math.min(20_000, deadline - Date.now()));
      return { client: await connectOnce(target, remaining), attempts, lastError };
    } catch (err) {
      lastError = err as Error;
      await sleep(100);
    }
  }
  throw new HilError(`SSH to ${target.host}:${target.port} failed after ${attempts} attempt(s)`, {
    detail: lastError?.message,
  });
}

export function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function openExec(client: Client, command: string): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, channel) => (err ? reject(err) : resolve(channel)));
  });
}

/**
 * openExec within a command's limit. A server that opens no channel in that time (stopped, or its
 * guest wedged) holds every later request on this connection too, until ssh2's keepalive gives up
 * on it (30 s): the connection is destroyed instead, so the next command connects anew.
 */
async function openWithin(
  client: Client,
  wrapped: string,
  timeoutMs: number | undefined,
  command: string,
): Promise<ClientChannel> {
  const opening = openExec(client, wrapped);
  if (timeoutMs === undefined) return opening;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const first = await Promise.race([opening, late]).finally(() => clearTimeout(timer));
  if (first !== "timeout") return first;
  opening.then(
    (channel) => channel.close(),
    () => {},
  );
  client.destroy();
  throw new HilError(`guest command timed out after ${timeoutMs} ms: ${command}`, {
    detail: "the guest's SSH server opened no channel for it in that time: the connection was given up",
  });
}

const SIGNAL_NUMBERS: Record<string, number> = {
  HUP: 1,
  INT: 2,
  QUIT: 3,
  ILL: 4,
  ABRT: 6,
  FPE: 8,
  KILL: 9,
  SEGV: 11,
  PIPE: 13,
  ALRM: 14,
  TERM: 15,
};

/** Waits for a channel to close; the exit status, or 128+signal number, or -1 if none was sent. */
function channelExit(channel: ClientChannel): Promise<{ exitCode: number; signal?: string }> {
  return new Promise((resolve) => {
    let exitCode = -1;
    let signal: string | undefined;
    channel.on("exit", (code: number | null, sig?: string) => {
      if (typeof code === "number") exitCode = code;
      else if (sig) {
        signal = sig.replace(/^SIG/, "");
        const n = SIGNAL_NUMBERS[signal];
        exitCode = n ? 128 + n : -1;
      }
    });
    channel.on("close", () => resolve(signal ? { exitCode, signal } : { exitCode }));
  });
}

interface ChannelInternals {
  outgoing?: { id: number; state: string };
  _client?: { _protocol?: { signal(id: number, name: string): void } };
}

/**
 * Sends a "signal" request. ssh2's channel.signal() refuses once stdin is closed (we close it at
 * once, for EOF), though the channel is still open; the protocol call has no such check.
 */
function signalChannel(channel: ClientChannel, name: string): void {
  const internals = channel as unknown as ChannelInternals;
  if (internals.outgoing?.state === "open") internals._client?._protocol?.signal(internals.outgoing.id, name);
}

export interface ExecOptions {
  timeoutMs?: number;
  /** bytes written to the command's stdin (then EOF) */
  input?: string | Uint8Array;
}

export interface ExecResult extends CommandResult {
  /** the signal that ended the command, if any */
  signal?: string;
}

/** What a wrapped command prints last on stderr: its exit status, for when the channel lacks one. */
const EXIT_MARK = "\u001ehil-exit=";
const EXIT_TRAILER = new RegExp(`\n?${EXIT_MARK}(\\d+)\n$`);

/**
 * The command in a subshell, its status printed after it on stderr. Dropbear now and then closes an
 * exec channel without the exit-status request (seen under load: ssh2 then reports no code), so
 * the status travels in the stream too. With a `tag`, every process the command starts carries
 * HIL_EXEC=<tag> in its environment, so the ones left after a kill can be found (killTagged).
 */
export function wrapForExitStatus(command: string, tag?: string): string {
  return `${tag === undefined ? "" : `export HIL_EXEC=${tag}; `}(${command}
); __hil_rc=$?; printf '\n${EXIT_MARK}%d\n' "$__hil_rc" >&2; exit "$__hil_rc"`;
}

/**
 * A guest command that SIGKILLs every process whose environment holds HIL_EXEC=<tag>. An SSH
 * "signal" request reaches only the session's shell (dropbear kills the pid it forked), not the
 * subshell and programs under it: those would run on after a timed-out command.
 */
export function killTagged(tag: string): string {
  if (!/^[0-9a-f]+$/.test(tag)) throw new Error(`exec tag ${tag}: not hexadecimal`);
  return `for p in /proc/[0-9]*; do tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -qx 'HIL_EXEC=${tag}' && kill -9 "\${p#/proc/}" 2>/dev/null; done; true`;
}

/** How long a timed-out command's clean-up (killTagged) may take before the timeout is reported. */
const REAP_MS = 5000;

/** Runs killTagged(tag) over its own channel; settles within REAP_MS whatever happens. */
async function reapTagged(client: Client, tag: string): Promise<void> {
  const reaped = openExec(client, killTagged(tag)).then((channel) => {
    channel.resume();
    channel.stderr.resume();
    channel.end();
    return channelExit(channel);
  });
  await Promise.race([reaped.catch(() => {}), sleep(REAP_MS)]);
}

/** Splits the status trailer off a wrapped command's stderr. */
export function splitExitTrailer(stderr: string): { stderr: string; exitCode?: number } {
  const m = EXIT_TRAILER.exec(stderr);
  if (!m) return { stderr };
  return { stderr: stderr.slice(0, m.index), exitCode: Number(m[1]) };
}

/** A command running in the guest whose stdin and stdout are used while it runs (execStream). */
export interface ExecStream {
  /** writes to the command's stdin; false once stdin is closed or the command has ended */
  write(data: string | Uint8Array): boolean;
  /** closes stdin (EOF), after writing `data` if given; further calls do nothing */
  end(data?: string | Uint8Array): void;
  /** the stdout received so far (UTF-8) */
  readonly stdout: string;
  /** calls `listener` with each piece of stdout as it arrives (not with what came before) */
  onStdout(listener: (chunk: string) => void): () => void;
  /**
   * SIGKILL to the command's shell (where the server honours signals), the channel closed, and
   * every process the command started killed over another channel (killTagged)
   */
  kill(): void;
  /**
   * The command's result when its channel closes: as execCommand's (the exit-status trailer taken
   * off stderr). Rejects with a HilError when timeoutMs passes first (the command is killed).
   */
  readonly result: Promise<ExecResult>;
}

export interface ExecStreamOptions {
  /** the whole command's limit, from its start */
  timeoutMs?: number;
}

/** Runs `command` with /bin/sh -c in the guest, its stdin open for writing and stdout seen as it comes. */
export async function execStream(
  client: Client,
  command: string,
  opts: ExecStreamOptions = {},
): Promise<ExecStream> {
  const tag = randomBytes(4).toString("hex");
  const started = Date.now();
  const channel = await openWithin(client, wrapForExitStatus(command, tag), opts.timeoutMs, command);
  const decoder = new StringDecoder("utf8");
  let stdout = "";
  const err: Buffer[] = [];
  const listeners = new Set<(chunk: string) => void>();
  let inputClosed = false;
  let ended = false;
  // a write racing the channel's close fails there; the result says how the command ended
  channel.on("error", () => {});
  channel.on("data", (d: Buffer) => {
    const chunk = decoder.write(d);
    if (!chunk) return;
    stdout += chunk;
    for (const l of [...listeners]) l(chunk);
  });
  channel.stderr.on("data", (d: Buffer) => err.push(d));
  const exit = channelExit(channel).then((outcome) => {
    const rest = decoder.end();
    if (rest) {
      stdout += rest;
      for (const l of [...listeners]) l(rest);
    }
    ended = true;
    return outcome;
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    if (opts.timeoutMs !== undefined)
      timer = setTimeout(() => resolve("timeout"), Math.max(0, opts.timeoutMs - (Date.now() - started)));
  });
  let reaped: Promise<void> | undefined;
  const kill = () => {
    if (ended || reaped) return;
    signalChannel(channel, "KILL");
    channel.close();
    reaped = reapTagged(client, tag);
  };
  const result = Promise.race([exit, timedOut]).then(async (outcome): Promise<ExecResult> => {
    clearTimeout(timer);
    const trailer = splitExitTrailer(Buffer.concat(err).toString("utf8"));
    const stderr = trailer.stderr;
    if (outcome === "timeout") {
      kill();
      await reaped;
      throw new HilError(`guest command timed out after ${opts.timeoutMs} ms: ${command}`, {
        detail:
          [stdout && `stdout:\n${stdout}`, stderr && `stderr:\n${stderr}`].filter(Boolean).join("\n") ||
          undefined,
      });
    }
    if (outcome.exitCode === -1 && !outcome.signal && trailer.exitCode !== undefined) {
      return { exitCode: trailer.exitCode, stdout, stderr };
    }
    return { ...outcome, stdout, stderr };
  });
  // a caller that only writes and waits may never look at the result before it rejects
  result.catch(() => {});
  return {
    write(data) {
      if (inputClosed || ended) return false;
      channel.write(data);
      return true;
    },
    end(data) {
      if (inputClosed) return;
      inputClosed = true;
      if (!ended) channel.end(data);
    },
    get stdout() {
      return stdout;
    },
    onStdout(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    kill,
    result,
  };
}

/**
 * Resolves with true once `done(stdout so far)` holds, or with false once the command has ended
 * without it (its result settled). `done` is checked at once and after each piece of stdout.
 */
export function waitForStdout(stream: ExecStream, done: (stdout: string) => boolean): Promise<boolean> {
  if (done(stream.stdout)) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    let settled = false;
    const finish = (v: boolean) => {
      if (settled) return;
      settled = true;
      off();
      resolve(v);
    };
    const off = stream.onStdout(() => {
      if (done(stream.stdout)) finish(true);
    });
    stream.result.then(
      () => finish(done(stream.stdout)),
      () => finish(done(stream.stdout)),
    );
  });
}

/** Runs `command` with /bin/sh -c in the guest; stdout and stderr stay separate. */
export async function execCommand(
  client: Client,
  command: string,
  opts: ExecOptions = {},
): Promise<ExecResult> {
  const stream = await execStream(
    client,
    command,
    opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs },
  );
  stream.end(opts.input ?? undefined);
  return stream.result;
}

export async function copyToGuest(
  client: Client,
  localPath: string,
  remotePath: string,
  mode?: number,
): Promise<void> {
  const chmod = mode === undefined ? "" : ` && chmod ${mode.toString(8)} ${shellQuote(remotePath)}`;
  const channel = await openExec(client, `cat > ${shellQuote(remotePath)}${chmod}`);
  const err: Buffer[] = [];
  channel.stderr.on("data", (d: Buffer) => err.push(d));
  channel.resume();
  const exit = channelExit(channel);
  // If the remote side fails at once, the channel closes under the upload: its status says why.
  const upload = await pipeline(createReadStream(localPath), channel).catch((err: Error) => err);
  const { exitCode } = await exit;
  if (exitCode !== 0 || upload instanceof Error) {
    throw new HilError(`cannot copy ${localPath} to the guest's ${remotePath}`, {
      detail:
        Buffer.concat(err).toString("utf8").trim() ||
        (upload instanceof Error ? upload.message : `exit status ${exitCode}`),
    });
  }
}

export async function copyFromGuest(client: Client, remotePath: string, localPath: string): Promise<void> {
  const channel = await openExec(client, `cat ${shellQuote(remotePath)}`);
  channel.end();
  const err: Buffer[] = [];
  channel.stderr.on("data", (d: Buffer) => err.push(d));
  const exit = channelExit(channel);
  await pipeline(channel, createWriteStream(localPath));
  const { exitCode } = await exit;
  if (exitCode !== 0) {
    await rm(localPath, { force: true });
    throw new HilError(`cannot copy the guest's ${remotePath} to ${localPath}`, {
      detail: Buffer.concat(err).toString("utf8").trim() || `exit status ${exitCode}`,
    });
  }
}

export interface ShellIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: NodeJS.WritableStream & {
    isTTY?: boolean;
    rows?: number;
    columns?: number;
    on(e: "resize", f: () => void): unknown;
  };
  stderr: NodeJS.WritableStream;
}

/** An interactive login shell on a pty, wired to the given terminal; resolves with its exit status. */
export async function interactiveShell(
  client: Client,
  io: ShellIo,
  term = process.env.TERM ?? "xterm",
): Promise<number> {
  const size = () => ({ rows: io.stdout.rows ?? 24, cols: io.stdout.columns ?? 80 });
  const channel = await new Promise<ClientChannel>((resolve, reject) => {
    client.shell({ term, ...size() }, (err, ch) => (err ? reject(err) : resolve(ch)));
  });
  const raw = Boolean(io.stdin.isTTY && io.stdin.setRawMode);
  if (raw) io.stdin.setRawMode?.(true);
  const onResize = () => {
    const { rows, cols } = size();
    channel.setWindow(rows, cols, 0, 0);
  };
  if (io.stdout.isTTY) io.stdout.on("resize", onResize);
  const exit = channelExit(channel);
  io.stdin.pipe(channel);
  channel.pipe(io.stdout, { end: false });
  channel.stderr.pipe(io.stderr, { end: false });
  try {
    return (await exit).exitCode;
  } finally {
    io.stdin.unpipe(channel);
    if (raw) io.stdin.setRawMode?.(false);
    if (io.stdout.isTTY) (io.stdout as unknown as NodeJS.EventEmitter).removeListener("resize", onResize);
    io.stdin.pause();
  }
}
