import { EventEmitter } from "node:events";
import { connect, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { HilError } from "../../util/errors.ts";

export interface QmpGreeting {
  version: { qemu: { major: number; minor: number; micro: number }; package: string };
  capabilities: string[];
}

export interface QmpEvent {
  event: string;
  data?: Record<string, unknown>;
  timestamp?: { seconds: number; microseconds: number };
}

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** Commands after which QEMU closes the connection instead of (or right after) replying. */
const CLOSING_COMMANDS = new Set(["quit"]);

/**
 * A QMP client on a unix socket: waits for the greeting, negotiates capabilities, then runs
 * commands (one id each) and emits "event" for asynchronous events.
 */
export class QmpClient extends EventEmitter<{ event: [QmpEvent]; close: [] }> {
  private buffer = "";
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private closed = false;
  greeting: QmpGreeting | undefined;

  private constructor(
    private readonly socket: Socket,
    readonly path: string,
  ) {
    super();
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("close", () => this.onClose());
    socket.on("error", () => {});
  }

  /** Connects (retrying while the socket does not exist yet) and negotiates capabilities. */
  static async connect(path: string, opts: { timeoutMs?: number } = {}): Promise<QmpClient> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    let lastError: unknown;
    while (Date.now() < deadline) {
      try {
        const socket = await openSocket(path);
        const client = new QmpClient(socket, path);
        client.greeting = await client.awaitGreeting(deadline - Date.now());
        await client.execute("qmp_capabilities");
        return client;
      } catch (err) {
        lastError = err;
        await sleep(100);
      }
    }
    throw new HilError("cannot connect to QEMU's QMP socket", {
      where: path,
      detail: lastError instanceof Error ? lastError.message : undefined,
    });
  }

  private greetingWaiter: ((g: QmpGreeting) => void) | undefined;

  private awaitGreeting(ms: number): Promise<QmpGreeting> {
    return new Promise((resolve, reject) => {
      const onClose = () => {
        clearTimeout(timer);
        reject(new Error("QMP socket closed before the greeting"));
      };
      const timer = setTimeout(
        () => {
          this.off("close", onClose);
          this.socket.destroy();
          reject(new Error("no QMP greeting"));
        },
        Math.max(ms, 1),
      );
      this.greetingWaiter = (g) => {
        clearTimeout(timer);
        this.off("close", onClose);
        resolve(g);
      };
      this.once("close", onClose);
    });
  }

  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (this.closed) return Promise.reject(new HilError(`QMP ${command}: the connection is closed`));
    const id = `hil-${this.nextId++}`;
    const message = JSON.stringify(
      args ? { execute: command, arguments: args, id } : { execute: command, id },
    );
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { command, resolve: resolve as (v: unknown) => void, reject });
      this.socket.write(`${message}\n`);
    });
  }

  /** Resolves with the next event named `name`, or rejects after `timeoutMs`. */
  waitEvent(name: string, timeoutMs: number): Promise<QmpEvent> {
    return new Promise((resolve, reject) => {
      const onEvent = (ev: QmpEvent) => {
        if (ev.event !== name) return;
        clearTimeout(timer);
        this.off("event", onEvent);
        resolve(ev);
      };
      const timer = setTimeout(() => {
        this.off("event", onEvent);
        reject(new HilError(`no QMP ${name} event within ${timeoutMs} ms`));
      }, timeoutMs);
      this.on("event", onEvent);
    });
  }

  /** Asks QEMU to exit; the connection closing counts as success. */
  async quit(): Promise<void> {
    await this.execute("quit");
  }

  close(): void {
    this.socket.destroy();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    for (let nl = this.buffer.indexOf("\n"); nl >= 0; nl = this.buffer.indexOf("\n")) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onMessage(line);
    }
  }

  private onMessage(line: string): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if ("QMP" in msg) {
      this.greetingWaiter?.(msg.QMP as QmpGreeting);
      this.greetingWaiter = undefined;
      return;
    }
    if (typeof msg.event === "string") {
      this.emit("event", msg as unknown as QmpEvent);
      return;
    }
    const id = typeof msg.id === "string" ? msg.id : undefined;
    const waiter = id ? this.pending.get(id) : undefined;
    if (!id || !waiter) return;
    this.pending.delete(id);
    if ("error" in msg) {
      const error = msg.error as { class?: string; desc?: string };
      waiter.reject(
        new HilError(
          `QMP ${waiter.command} failed: ${error.desc ?? "unknown error"} (${error.class ?? "?"})`,
        ),
      );
    } else {
      waiter.resolve(msg.return);
    }
  }

  private onClose(): void {
    this.closed = true;
    for (const [id, waiter] of this.pending) {
      this.pending.delete(id);
      if (CLOSING_COMMANDS.has(waiter.command)) waiter.resolve(undefined);
      else waiter.reject(new HilError(`QMP ${waiter.command}: QEMU closed the connection`));
    }
    this.emit("close");
  }
}

function openSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", reject);
  });
}
