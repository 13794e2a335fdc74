/**
 * Progress on stderr. On a terminal one line is redrawn in place; elsewhere (CI logs) a line is
 * printed when the step starts, at most every `intervalMs` while it runs, and when it ends.
 */
export interface ProgressSink {
  write(text: string): void;
  isTTY: boolean;
}

const stderrSink: ProgressSink = {
  write: (t) => process.stderr.write(t),
  get isTTY() {
    return Boolean(process.stderr.isTTY);
  },
};

function fmtDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

export class Step {
  private readonly started = Date.now();
  private lastPrinted = 0;
  private lastText = "";
  private done = false;

  constructor(
    private readonly label: string,
    private readonly sink: ProgressSink,
    private readonly intervalMs: number,
  ) {
    this.emit(`${label} ...`, true);
  }

  /** Reports `n` of `total` (total may be unknown) with an optional detail. */
  update(n: number, total?: number, detail?: string): void {
    const frac = total && total > 0 ? Math.min(1, n / total) : undefined;
    const bar = frac === undefined ? `${n}` : `${renderBar(frac)} ${n}/${total}`;
    this.emit(
      `${this.label} ${bar}${detail ? ` ${detail}` : ""} (${fmtDuration(Date.now() - this.started)})`,
    );
  }

  note(text: string): void {
    this.emit(`${this.label}: ${text}`);
  }

  succeed(text = "done"): void {
    this.finish(`${this.label}: ${text} in ${fmtDuration(Date.now() - this.started)}`);
  }

  fail(text = "failed"): void {
    this.finish(`${this.label}: ${text} after ${fmtDuration(Date.now() - this.started)}`);
  }

  private finish(text: string): void {
    if (this.done) return;
    this.done = true;
    if (this.sink.isTTY) this.sink.write(`\r\x1b[2K${text}\n`);
    else this.sink.write(`${text}\n`);
  }

  private emit(text: string, force = false): void {
    if (this.done) return;
    const now = Date.now();
    if (this.sink.isTTY) {
      this.sink.write(`\r\x1b[2K${text.slice(0, (process.stderr.columns ?? 120) - 1)}`);
      return;
    }
    if (!force && (now - this.lastPrinted < this.intervalMs || text === this.lastText)) return;
    this.lastPrinted = now;
    this.lastText = text;
    this.sink.write(`${text}\n`);
  }
}

export function renderBar(frac: number, width = 24): string {
  const filled = Math.round(frac * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.round(frac * 100)).padStart(3)}%`;
}

export class Progress {
  constructor(
    private readonly sink: ProgressSink = stderrSink,
    private readonly intervalMs = 15_000,
  ) {}

  step(label: string): Step {
    return new Step(label, this.sink, this.intervalMs);
  }

  info(text: string): void {
    this.sink.write(`${text}\n`);
  }
}

export const progress = new Progress();
