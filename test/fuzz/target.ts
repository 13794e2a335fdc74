/** What a fuzz target gives the engine, and what its oracles report for one input. */

export interface Findings {
  /** guest-memory accesses the model made outside what the guest mapped (each described) */
  outOfBounds: string[];
  /** fds open after the input that were not before it ("fd: what it is") */
  fdLeaks: string[];
}

export interface FuzzTarget {
  readonly name: string;
  /** the scripts whose block coverage guides the fuzzer (matched against file URLs) */
  readonly watch: RegExp;
  /** longest input the mutator makes */
  readonly maxLen: number;
  /** an input that runs longer than this is a hang (reported as a crash) */
  readonly timeoutMs: number;
  /** starting inputs, used besides the stored corpus */
  seeds(): Uint8Array[];
  /** Runs one input on fresh state. Throws for a crash; returns what the oracles found. */
  run(input: Uint8Array): Promise<Findings>;
}
