/**
 * Lines gathered for a file and written in batches: one write a few milliseconds after the first
 * pending line (sooner once many are pending) instead of one write per line. A hardware trace has a
 * line per MMIO access, and a stream write per line put a thread-pool write and its completion on
 * every round trip the guest waits for. The order of the lines is kept; `flush` writes what is
 * pending at once (before the stream is closed).
 */

/** How long a line may wait before it is written: readers of a live trace poll in 50 ms steps or more. */
export const BATCH_DELAY_MS = 5;
/** Pending bytes (UTF-16 units) that are written at once, without waiting for the delay. */
export const BATCH_MAX_CHARS = 64 << 10;

export class LineBatch {
  private pending: string[] = [];
  private chars = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly write: (text: string) => void) {}

  /** Queues one line (with its newline). */
  push(line: string): void {
    this.pending.push(line);
    this.chars += line.length;
    if (this.chars >= BATCH_MAX_CHARS) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), BATCH_DELAY_MS);
      // the process ends through stop(), which flushes: a pending batch must not keep it alive
      this.timer.unref();
    }
  }

  /** Writes every pending line now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const text = this.pending.join("");
    this.pending = [];
    this.chars = 0;
    this.write(text);
  }
}
