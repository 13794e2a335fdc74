import type { DriverName, ExecutorKind, OracleProfile } from "../scenario/schema.ts";

/** How the drain suite runs, as run, validate and bisect take it: --executor, --driver, --rules. */
export interface SuiteOptionValues {
  executor?: ExecutorKind;
  driver?: DriverName;
  rules?: OracleProfile[];
}
