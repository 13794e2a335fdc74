import type { ExpectedRc, StepKind } from "./schema.ts";

/** One command line as the executor was given it, and where it came from. */
export type SentCommand = {
  line: string;
  phase: "setup" | "step" | "settle" | "teardown" | "barrier";
  /** the scenario step (0-based) and its line in the file, for phase "step" */
  step?: number;
  stepLine?: number;
  kind?: StepKind;
  expect?: ExpectedRc;
};
