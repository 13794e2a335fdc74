/**
 * Socket transport with fd passing: a listening UNIX socket (server side) or one connected socket
 * (the fake client), received by a worker thread (recv-worker.mjs: blocking recvmsg, framing, fds)
 * and sent from the main thread without blocking (MSG_DONTWAIT, queued when the socket is full).
 * The main thread owns every fd: the worker never closes one.
 */
import { existsSync, lstatSync, unlinkSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { closeFd, connectUnix, listenUnix, SysError, sendNonBlocking, shutdownFd } from "./libc.ts";

const WORKER_URL = new URL("./recv-worker.mjs", import.meta.url);

export interface IncomingMessage {
  data: Buffer;
  /** fds received with the message; the receiver owns them and must close or keep each one. */
  fds: number[];
  /** the control buffer was too small: some fds were dropped by the kernel */
  ctrunc: boolean;
}

export interface TransportLimits {
  /** largest whole message (header included) accepted; a larger size field closes the connection */
  maxMessage: number;
  /** fds one recvmsg can carry before the kernel truncates (and closes) the rest */
  maxFds: number;
  /** bytes queued for sending before the connection is dropped as stuck */
  maxSendQueue?: number;
}

type WorkerMsg =
  | { type: "accepted"; fd: number }
  | { type: "message"; data: ArrayBuffer; fds: number[]; ctrunc: boolean }
  | { type: "closed"; reason: string; clean: boolean; fds: number[]; header?: ArrayBuffer }
  | { type: "accept-error"; errno: number }
  | { type: "fatal"; message: string }
  | { type: "exit" };

/** One connected socket. `send` never blocks; `close` shuts it down and reports through onClose. */
export class Connection {
  private queue: { data: Uint8Array; fds: number[] }[] = [];
  private queued = 0;
  private timer: NodeJS.Timeout | undefined;
  private open = true;
  private shutdownReason: string | undefined;

  constructor(
    readonly fd: number,
    private readonly maxSendQueue: number,
  ) {}

  get isOpen(): boolean {
    return this.open;
  }

  /** Why the local side shut the connection, if it did. */
  get localCloseReason(): string | undefined {
    return this.shutdownReason;
  }

  send(data: Uint8Array, fds: number[] = []): void {
    if (!this.open) return;
    this.queue.push({ data, fds });
    this.queued += data.length;
    if (this.queued > this.maxSendQueue) {
      this.shutdown(`send queue over ${this.maxSendQueue} bytes: peer not reading`);
      return;
    }
    this.flush();
  }

  private flush(): void {
    if (this.timer) return;
    while (this.open && this.queue.length > 0) {
      const head = this.queue[0] as { data: Uint8Array; fds: number[] };
      let n: number;
      try {
        n = sendNonBlocking(this.fd, head.data, head.fds);
      } catch (err) {
        this.shutdown(err instanceof SysError ? err.message : String(err));
        return;
      }
      if (n === 0) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.flush();
        }, 1);
        return;
      }
      this.queued -= n;
      if (n >= head.data.length) this.queue.shift();
      else this.queue[0] = { data: head.data.subarray(n), fds: [] };
    }
  }

  /** Stops sending and wakes the receiver; the fd is closed when the receiver reports the close. */
  shutdown(reason: string): void {
    if (!this.open) return;
    this.open = false;
    this.shutdownReason = reason;
    this.dropQueue();
    shutdownFd(this.fd);
  }

  /** Called by the owner once the receive side has finished with the fd. */
  finish(): void {
    this.open = false;
    this.dropQueue();
    closeFd(this.fd);
  }

  private dropQueue(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
    this.queued = 0;
  }
}

export interface EndpointHandlers {
  onConnect?(conn: Connection): void;
  onMessage(conn: Connection, msg: IncomingMessage): void;
  /** The connection is gone (peer closed, local shutdown, or a framing error); its fd is closed. */
  onDisconnect?(conn: Connection, reason: string): void;
  /** Something the owner should log (accept errors, worker failure). */
  onLog?(text: string): void;
}

function closeAll(fds: readonly number[]): void {
  for (const fd of fds) closeFd(fd);
}

/** The worker and the connection it serves; shared by the listener and the client. */
class ReceiveLoop {
  readonly control = new Int32Array(new SharedArrayBuffer(8));
  readonly worker: Worker;
  readonly exited: Promise<void>;
  conn: Connection | undefined;

  constructor(
    init: { listenFd: number; connFd: number },
    private readonly limits: TransportLimits,
    private readonly handlers: EndpointHandlers,
    private readonly rearm: boolean,
  ) {
    this.worker = new Worker(WORKER_URL, {
      // Plain JavaScript: no loaders or test hooks from the parent's command line.
      execArgv: [],
      workerData: {
        listenFd: init.listenFd,
        connFd: init.connFd,
        maxMessage: limits.maxMessage,
        maxFds: limits.maxFds,
        control: this.control.buffer,
      },
    });
    if (init.connFd >= 0) this.conn = new Connection(init.connFd, limits.maxSendQueue ?? 64 << 20);
    this.exited = new Promise((resolve) => {
      this.worker.on("exit", () => {
        // A close the worker reported is handled already; otherwise the receiver died: clean up.
        const conn = this.conn;
        this.conn = undefined;
        if (conn) {
          conn.finish();
          this.handlers.onDisconnect?.(conn, conn.localCloseReason ?? "receive worker exited");
        }
        resolve();
      });
    });
    this.worker.on("message", (m: WorkerMsg) => this.onWorker(m));
    this.worker.on("error", (err) => handlers.onLog?.(`receive worker failed: ${err.message}`));
  }

  private onWorker(m: WorkerMsg): void {
    switch (m.type) {
      case "accepted": {
        this.conn = new Connection(m.fd, this.limits.maxSendQueue ?? 64 << 20);
        this.handlers.onConnect?.(this.conn);
        return;
      }
      case "message": {
        const conn = this.conn;
        if (!conn?.isOpen) {
          closeAll(m.fds);
          return;
        }
        this.handlers.onMessage(conn, { data: Buffer.from(m.data), fds: m.fds, ctrunc: m.ctrunc });
        return;
      }
      case "closed": {
        closeAll(m.fds);
        const conn = this.conn;
        this.conn = undefined;
        if (conn) {
          const reason = conn.localCloseReason ?? m.reason;
          conn.finish();
          this.handlers.onDisconnect?.(conn, reason);
        }
        if (this.rearm) {
          Atomics.store(this.control, 1, 1);
          Atomics.notify(this.control, 1);
        }
        return;
      }
      case "accept-error":
        this.handlers.onLog?.(`accept failed: errno ${m.errno}`);
        return;
      case "fatal":
        this.handlers.onLog?.(`receive worker failed: ${m.message}`);
        return;
      case "exit":
        return;
    }
  }

  /** Asks the worker to stop; the caller wakes blocking calls (shutdown of the fds). */
  stop(): void {
    Atomics.store(this.control, 0, 1);
    Atomics.notify(this.control, 0);
    Atomics.notify(this.control, 1);
  }
}

/** A listening UNIX socket that serves one client at a time. */
export class Listener {
  private readonly loop: ReceiveLoop;
  private closed: Promise<void> | undefined;

  private constructor(
    readonly path: string,
    private readonly fd: number,
    limits: TransportLimits,
    handlers: EndpointHandlers,
  ) {
    this.loop = new ReceiveLoop({ listenFd: fd, connFd: -1 }, limits, handlers, true);
  }

  static open(path: string, limits: TransportLimits, handlers: EndpointHandlers): Listener {
    if (existsSync(path)) {
      const st = lstatSync(path);
      if (!st.isSocket()) throw new SysError("bind", 17, `${path} exists and is not a socket`);
      // A live server answers a connect; a stale socket file (its server died) refuses it.
      let live = false;
      try {
        closeFd(connectUnix(path));
        live = true;
      } catch {
        // ECONNREFUSED: stale
      }
      if (live) throw new SysError("bind", 98, `${path} is in use by a running server`);
      unlinkSync(path);
    }
    const fd = listenUnix(path);
    return new Listener(path, fd, limits, handlers);
  }

  get connection(): Connection | undefined {
    return this.loop.conn;
  }

  /** Stops accepting, drops the client, closes every fd and removes the socket file. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = (async () => {
        this.loop.stop();
        shutdownFd(this.fd);
        this.loop.conn?.shutdown("server closing");
        await this.loop.exited;
        closeFd(this.fd);
        try {
          unlinkSync(this.path);
        } catch {
          // already gone
        }
      })();
    }
    return this.closed;
  }
}

/** The client end of one connection (fake client, fuzzer). */
export class ClientSocket {
  private readonly loop: ReceiveLoop;
  private closed: Promise<void> | undefined;
  readonly connection: Connection;

  private constructor(fd: number, limits: TransportLimits, handlers: EndpointHandlers) {
    this.loop = new ReceiveLoop({ listenFd: -1, connFd: fd }, limits, handlers, false);
    this.connection = this.loop.conn as Connection;
  }

  static connect(path: string, limits: TransportLimits, handlers: EndpointHandlers): ClientSocket {
    return new ClientSocket(connectUnix(path), limits, handlers);
  }

  static fromFd(fd: number, limits: TransportLimits, handlers: EndpointHandlers): ClientSocket {
    return new ClientSocket(fd, limits, handlers);
  }

  get exited(): Promise<void> {
    return this.loop.exited;
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = (async () => {
        this.loop.stop();
        this.connection.shutdown("client closing");
        await this.loop.exited;
      })();
    }
    return this.closed;
  }
}
