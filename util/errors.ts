/** hil's exit status when the machine, not the input, kept a run from being judged or recorded (a full disk) */
export const ENVIRONMENT_EXIT = 3;

/** A failure caused by the user's input or the machine, reported as one clear line (plus detail). */
export class HilError extends Error {
  readonly where: string | undefined;
  readonly detail: string | undefined;
  readonly exitCode: number;

  constructor(
    message: string,
    opts: { where?: string; detail?: string; exitCode?: number; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "HilError";
    this.where = opts.where;
    this.detail = opts.detail;
    this.exitCode = opts.exitCode ?? 2;
  }

  /** The text the CLI prints: "where: message" and the detail below it. */
  format(): string {
    const head = this.where ? `${this.where}: ${this.message}` : this.message;
    return this.detail ? `${head}\n${this.detail.replace(/\s+$/, "")}` : head;
  }
}

export function isHilError(err: unknown): err is HilError {
  return err instanceof HilError;
}
