/**
 * The device's work engine: deferred jobs (command processing, event delivery) run one at a time,
 * in order, outside register handlers. A reset starts a new epoch: queued jobs of the old epoch are
 * dropped and a running one stops at its next check.
 */

export interface JobContext {
  /** false once the device was reset after this job was queued */
  alive(): boolean;
}

interface Job {
  name: string;
  epoch: number;
  run: (ctx: JobContext) => Promise<void>;
  dropped?: () => void;
}

export class WorkQueue {
  private readonly jobs: Job[] = [];
  private running = false;
  private scheduled = false;
  private waiters: Array<() => void> = [];
  private epochValue = 0;

  constructor(
    private readonly defer: (fn: () => void) => void,
    private readonly onError: (job: string, err: unknown) => void,
    /** true while a register access is being handled: work must not start inside one */
    private readonly inAccess: () => boolean = () => false,
  ) {}

  get epoch(): number {
    return this.epochValue;
  }

  /** queued jobs plus the running one */
  get pending(): number {
    return this.jobs.length + (this.running ? 1 : 0);
  }

  /** Queues `run`; `dropped` is called instead if a reset discards the job before it starts. */
  post(name: string, run: (ctx: JobContext) => Promise<void>, dropped?: () => void): void {
    this.jobs.push(
      dropped ? { name, epoch: this.epochValue, run, dropped } : { name, epoch: this.epochValue, run },
    );
    this.kick();
  }

  /** Drops queued work and makes running work stale. */
  newEpoch(): void {
    this.epochValue++;
    const dropped = this.jobs.splice(0);
    for (const job of dropped) job.dropped?.();
    if (!this.running && !this.scheduled) this.release();
  }

  /** Resolves once no job is queued or running. */
  idle(): Promise<void> {
    if (!this.running && !this.scheduled && this.jobs.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private kick(): void {
    if (this.running || this.scheduled || this.jobs.length === 0) return;
    this.scheduled = true;
    const run = () => {
      if (this.inAccess()) {
        // a host whose defer() ran us synchronously: wait until the access has returned
        setImmediate(run);
        return;
      }
      this.scheduled = false;
      void this.drain();
    };
    this.defer(run);
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let job = this.jobs.shift(); job; job = this.jobs.shift()) {
        const epoch = job.epoch;
        if (epoch !== this.epochValue) {
          job.dropped?.();
          continue;
        }
        try {
          await job.run({ alive: () => epoch === this.epochValue });
        } catch (err) {
          this.onError(job.name, err);
        }
      }
    } finally {
      this.running = false;
    }
    if (this.jobs.length > 0) this.kick();
    else this.release();
  }

  private release(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
