/**
 * The command line the verbs benchmarks share: --kernel, --iters (a whole number >= 100) and
 * --json; the measurement's result as JSON or as the benchmark's table on stdout, an error as one
 * message on stderr and exit status 1.
 */
import { parseArgs } from "node:util";
import { isHilError } from "../util/errors.ts";

export function runBench<R>(
  defaultIters: number,
  measure: (kernel: string, iters: number) => Promise<R>,
  table: (result: R) => string,
): void {
  const main = async () => {
    const { values } = parseArgs({
      options: {
        kernel: { type: "string", default: "debian:6.12" },
        iters: { type: "string", default: String(defaultIters) },
        json: { type: "boolean", default: false },
      },
    });
    const iters = Number(values.iters);
    if (!Number.isInteger(iters) || iters < 100)
      throw new Error(`--iters ${values.iters}: a whole number >= 100`);
    const r = await measure(values.kernel as string, iters);
    process.stdout.write(values.json ? `${JSON.stringify(r, null, 2)}\n` : `${table(r)}\n`);
  };
  main().catch((err) => {
    process.stderr.write(`${isHilError(err) ? err.format() : (err as Error).stack}\n`);
    process.exit(1);
  });
}
