import type { Command } from "commander";

/** The command modules, in the order `hil --help` lists them; each registers its own subcommands. */
const COMMAND_MODULES = [
  () => import("./setup-command.ts"),
  () => import("./kernel-command.ts"),
  () => import("./boot-command.ts"),
  () => import("./run-command.ts"),
  () => import("./report-command.ts"),
  () => import("./repro-command.ts"),
  () => import("./validate-command.ts"),
  () => import("./bisect-command.ts"),
  () => import("./diff-command.ts"),
  () => import("./matrix-command.ts"),
  () => import("./merge-command.ts"),
  () => import("./lava-command.ts"),
  () => import("./cache-command.ts"),
  () => import("./scenarios-command.ts"),
  () => import("./version-command.ts"),
];

/** Registers every hil command on `program`. */
export async function registerCommands(program: Command): Promise<void> {
  for (const mod of await Promise.all(COMMAND_MODULES.map((load) => load()))) mod.register(program);
}
