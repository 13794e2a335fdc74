/**
 * The hardware trace's writer: the device emits plain objects of ErdmaTraceEvent (the type of
 * trace-schema.ts's schema, imported as a type only: the writer never validates).
 */
import type { ErdmaTraceEvent } from "./trace-schema.ts";

export type { Doorbell, DoorbellRing, ErdmaTraceEvent } from "./trace-schema.ts";

/** Distributes an event type over the union members so `Omit` keeps each member's fields. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
export type TraceInput = DistributiveOmit<ErdmaTraceEvent, "t" | "dev">;

export class Tracer {
  constructor(
    private readonly sink: (e: ErdmaTraceEvent) => void,
    private readonly clock: () => number,
    readonly dev: string,
  ) {}

  emit(e: TraceInput): void {
    try {
      this.sink({ t: this.clock(), dev: this.dev, ...e } as ErdmaTraceEvent);
    } catch {
      // a failing trace sink must not take the device down
    }
  }

  warn(message: string, detail?: Record<string, unknown>): void {
    this.emit(detail ? { kind: "warn", message, detail } : { kind: "warn", message });
  }
}
