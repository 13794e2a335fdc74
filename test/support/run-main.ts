/** Runs a support tool's `main` when its file is the one node was started with. */
import { HilError } from "../../util/errors.ts";

export function runAsMain(
  moduleUrl: string,
  main: (argv: string[]) => Promise<number>,
  failureCode: number,
): void {
  if (moduleUrl !== `file://${process.argv[1]}`) return;
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof HilError ? err.format() : String(err)}\n`);
      process.exit(failureCode);
    },
  );
}
