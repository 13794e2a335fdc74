import { Command } from "commander";

/**
 * Runs one hil command in-process with commander, as main.ts would: `register` adds it to a fresh
 * program, stdout is captured, stderr dropped, and process.exitCode is read, then put back. What
 * the command throws is returned as `err`.
 */
export async function runInProcess(
  register: (program: Command) => void,
  args: readonly string[],
): Promise<{ stdout: string; exitCode: number; err?: unknown }> {
  const program = new Command("hil")
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  register(program);
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const errWrite = process.stderr.write.bind(process.stderr);
  const before = process.exitCode;
  process.stdout.write = ((c: string) => chunks.push(String(c)) > 0) as typeof process.stdout.write;
  process.stderr.write = (() => true) as typeof process.stderr.write;
  try {
    await program.parseAsync(["node", "hil", ...args]);
    return { stdout: chunks.join(""), exitCode: Number(process.exitCode ?? 0) };
  } catch (err) {
    return { stdout: chunks.join(""), exitCode: Number(process.exitCode ?? 0), err };
  } finally {
    process.stdout.write = write;
    process.stderr.write = errWrite;
    process.exitCode = before;
  }
}
