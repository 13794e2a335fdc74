import { Command, CommanderError } from "commander";
import { isHilError } from "../../util/errors.ts";
import { recordInvocation } from "../../util/invocation.ts";
import { registerCommands } from "./commands.ts";

const program = new Command("hil")
  .description(
    "erdma-hil: boots QEMU guests with an emulated erdma device and judges RDMA drain/flush behaviour",
  )
  .option("-V, --version", "print the versions of hil and of what it would use (hil version)")
  .exitOverride();

/** Every command's own errors (a bad option value, an unknown command) in one line with a hint, no help dump. */
function oneLineErrors(command: Command, path: string): void {
  command.configureOutput({
    outputError: (text, write) =>
      write(`hil: ${text.trim().replace(/\s*\n\s*/g, " ")} (see ${path} --help)\n`),
  });
  for (const sub of command.commands) oneLineErrors(sub, `${path} ${sub.name()}`);
}

// A reader that stops early (`hil ... | head`) closes the pipe: that ends the output, not the program
// with a stack trace. Whatever cleanup is registered still runs on exit.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw err;
});

// what the user typed: a run record keeps it (its report names the command that made it)
recordInvocation(process.argv.slice(2));

// `hil --version` is `hil version`, which loads only its own modules, not every command's.
const [first, ...rest] = process.argv.slice(2);
const versionOnly = first === "version" || first === "--version" || first === "-V";
const argv = versionOnly ? [...process.argv.slice(0, 2), "version", ...rest] : process.argv;

async function main(): Promise<number> {
  if (versionOnly) (await import("./version-command.ts")).register(program);
  else await registerCommands(program);
  oneLineErrors(program, "hil");
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (isHilError(err)) {
      process.stderr.write(`hil: error: ${err.format()}\n`);
      return err.exitCode;
    }
    process.stderr.write(
      `hil: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return 70;
  }
}

process.exitCode = await main();
