/** What the oracle judges of one scenario: the executor's trace records plus what the harness saw itself. */
import type { HwTraceEvent } from "../protocol/hw-trace.ts";
import type { Observation } from "../protocol/observations.ts";
import type { TraceRecord } from "../protocol/trace.ts";
import type { SentCommand } from "../scenario/sent-command.ts";

export interface ScenarioTrace {
  records: readonly TraceRecord[];
  observations: readonly Observation[];
  /** the command lines the executor was given (the commands rule); absent: not judged */
  commands?: readonly SentCommand[];
  /** the device's hardware trace of the scenario (absent: no device model) */
  hw?: readonly HwTraceEvent[];
}
