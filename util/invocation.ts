/**
 * The command line this process was started with, as the user typed it (the arguments after
 * `hil`) and the directory it ran in. The CLI's entry point records it; a run record keeps it so
 * its report can say what made the run. Undefined where no CLI started the process (a test that
 * calls a workflow directly).
 */
export type Invocation = {
  /** the arguments after `hil` */
  argv: string[];
  /** the working directory, absolute */
  cwd: string;
};

let current: Invocation | undefined;

export function recordInvocation(argv: readonly string[], cwd = process.cwd()): void {
  current = { argv: [...argv], cwd };
}

export function invocation(): Invocation | undefined {
  return current ? { argv: [...current.argv], cwd: current.cwd } : undefined;
}
