export interface NinjaProgress {
  done: number;
  total: number;
}

/** Reads ninja's status prefix, e.g. "[123/2605] Compiling C object ..." -> {done: 123, total: 2605}. */
export function parseNinjaProgress(line: string): NinjaProgress | undefined {
  const m = /^\[(\d+)\/(\d+)\] /.exec(line);
  if (!m) return undefined;
  const done = Number(m[1]);
  const total = Number(m[2]);
  return total > 0 && done <= total ? { done, total } : undefined;
}
