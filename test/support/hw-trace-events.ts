// Hand-made device trace events for the oracle's unit tests, in the shape the erdma model's trace
// writes them (qemu/erdma/trace-schema.ts); callers add t and dev (each test keeps its own clock).
import type { ErdmaTraceEventOf } from "../../harness/protocol/hw-trace.ts";
import { statusName } from "../../qemu/erdma/status.ts";

export type CmdEventBody = Omit<ErdmaTraceEventOf<"cmd">, "t" | "dev">;

/**
 * A command completion: opcode, submod, cookie and sqeIdx zero, statusName the model's name for
 * `status` (qemu/erdma/status.ts), unless `more` says otherwise.
 */
export function cmdEventBody(name: string, status = 0, more: Partial<CmdEventBody> = {}): CmdEventBody {
  return {
    kind: "cmd",
    opcode: 0,
    submod: 0,
    name,
    cookie: 0,
    sqeIdx: 0,
    status,
    statusName: statusName(status),
    ...more,
  };
}
