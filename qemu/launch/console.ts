import { closeSync, openSync, readSync } from "node:fs";

export interface ConsoleMatch {
  line: string;
  match: RegExpExecArray;
}

/**
 * Follows the serial console log QEMU writes: keeps the text, splits it into lines, and lets
 * callers wait for a line matching a pattern. Polls the file (QEMU appends to it).
 */
export class ConsoleFollower {
  private fd: number | undefined;
  private offset = 0;
  private partial = "";
  private readonly lines: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly listeners = new Set<(line: string) => void>();
  private readonly decoder = new TextDecoder("utf-8");
  /** when the console last grew (or the follower started): Date.now() */
  lastOutputAt = Date.now();

  constructor(
    private readonly path: string,
    private readonly pollMs = 50,
  ) {}

  start(): void {
    if (this.timer || this.stopped) return;
    this.lastOutputAt = Date.now();
    this.timer = setInterval(() => this.poll(), this.pollMs);
    this.timer.unref();
  }

  /** Reads what is left and closes the file; the text stays available. */
  stop(): void {
    if (this.stopped) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.poll();
    this.stopped = true;
    if (this.partial) this.emit(this.partial);
    this.partial = "";
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }

  /** Reads what QEMU appended since the last poll. */
  poll(): void {
    if (this.stopped) return;
    if (this.fd === undefined) {
      try {
        this.fd = openSync(this.path, "r");
      } catch {
        return;
      }
    }
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      const n = readSync(this.fd, buf, 0, buf.length, this.offset);
      if (n <= 0) break;
      this.offset += n;
      this.lastOutputAt = Date.now();
      const text = this.partial + this.decoder.decode(buf.subarray(0, n), { stream: true });
      const parts = text.split("\n");
      this.partial = parts.pop() ?? "";
      for (const p of parts) this.emit(p.replace(/\r$/, ""));
    }
  }

  private emit(line: string): void {
    this.lines.push(line);
    for (const l of [...this.listeners]) l(line);
  }

  onLine(fn: (line: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Resolves with the first line (already seen or yet to come) matching `pattern`. */
  waitFor(pattern: RegExp): { promise: Promise<ConsoleMatch>; cancel: () => void } {
    let cancel = () => {};
    const promise = new Promise<ConsoleMatch>((resolve) => {
      for (const line of this.lines) {
        const m = pattern.exec(line);
        if (m) return resolve({ line, match: m });
      }
      const off = this.onLine((line) => {
        const m = pattern.exec(line);
        if (m) {
          off();
          resolve({ line, match: m });
        }
      });
      cancel = off;
    });
    return { promise, cancel: () => cancel() };
  }

  tail(n: number): string[] {
    const all = this.partial ? [...this.lines, this.partial] : this.lines;
    return all.slice(-n);
  }

  text(): string {
    return this.lines.join("\n") + (this.partial ? `\n${this.partial}` : this.lines.length ? "\n" : "");
  }
}
