/**
 * The RTL queue engine: the verilated erdma_queue_engine (build.ts) loaded with koffi, answering
 * the device model's questions (queue-engine.ts) one clocked request at a time through the C ABI
 * of engine_abi.cpp. One model per process: the engine is combinational behind a register stage
 * and keeps no state across requests, so every device of the process can share it.
 */
import koffi from "koffi";
import type { ErrorFlushMode } from "../profile.ts";
import type { FlushReason, QueueEngine } from "../queue-engine.ts";

const MODES: Record<ErrorFlushMode, number> = { stop: 0, reflush: 1, always: 2 };
const REASONS: readonly FlushReason[] = ["pi", "error", "reflush"];

export interface RtlQueueEngine extends QueueEngine {
  /** clock cycles the model has run */
  cycles(): number;
}

const loaded = new Map<string, RtlQueueEngine>();

/** The engine of the shared library at `path` (loaded once per process). */
export function loadRtlEngine(path: string): RtlQueueEngine {
  const known = loaded.get(path);
  if (known) return known;
  const lib = koffi.load(path);
  const open = lib.func("int qe_open()");
  const cycles = lib.func("uint64_t qe_cycles()");
  const cqe = lib.func("int qe_cqe(uint32_t pi, uint32_t depth_log2, uint32_t hdr, uint32_t *out)");
  const limit = lib.func(
    "int qe_flush_limit(uint32_t mode, uint32_t pi, uint32_t ci, uint32_t error_valid, uint32_t error_pi, uint32_t reflush_valid, uint32_t reflush_pi, uint32_t *out)",
  );
  const step = lib.func(
    "int qe_flush_step(uint32_t ci, uint32_t limit, uint32_t wqebbs, uint32_t depth_log2, uint32_t pending, uint32_t *out)",
  );
  if (open() !== 0) throw new Error(`${path}: the queue engine did not come out of reset`);
  const out = new Uint32Array(3);
  const answered = (rc: number, what: string) => {
    if (rc !== 0) throw new Error(`RTL queue engine: no response to ${what}`);
  };
  const engine: RtlQueueEngine = {
    name: "rtl",
    origins: { flushComplete: "erdma_flush_step.complete", flushHold: "erdma_flush_step.hold" },
    cycles: () => Number(cycles()),
    cqe(pi, depthLog2, header) {
      answered(cqe(pi >>> 0, depthLog2, header >>> 0, out), "OP_CQE");
      return { header: out[0] as number, slot: out[1] as number, nextPi: out[2] as number };
    },
    flushLimit({ mode, pi, ci, errorPi, reflushPi }) {
      const rc = limit(
        MODES[mode],
        pi,
        ci,
        errorPi === undefined ? 0 : 1,
        errorPi ?? 0,
        reflushPi === undefined ? 0 : 1,
        reflushPi ?? 0,
        out,
      );
      answered(rc, "OP_FLUSH_LIMIT");
      const word = out[0] as number;
      return { limit: word & 0xffff, reason: REASONS[(word >>> 16) & 3] ?? "pi" };
    },
    flushStep(ci, lim, wqebbs, depthLog2, pending = false) {
      answered(step(ci, lim, Math.min(wqebbs, 0xff), depthLog2, pending ? 1 : 0, out), "OP_FLUSH_STEP");
      const word = out[0] as number;
      const next = word & 0xffff;
      const taken = (word >>> 16) & 0xff;
      const complete = ((word >>> 24) & 1) === 1;
      return ((word >>> 26) & 1) === 1 ? { next, taken, complete, hold: true } : { next, taken, complete };
    },
  };
  loaded.set(path, engine);
  return engine;
}
