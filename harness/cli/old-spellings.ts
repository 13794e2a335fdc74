/**
 * Old spellings of options that were renamed so that one word means one thing (`--profile` is the
 * device's behaviour, now `--device-profile`; `--oracle` the oracle's rule sets, now `--rules`;
 * `--base` the kernel, now `--kernel` as on every command). An old spelling still works, is hidden
 * from --help, and prints one notice on stderr naming the new one.
 */
import { type Command, Option } from "commander";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";

/** The renamed options: old flag -> the flag it is now. */
export const OLD_SPELLINGS = {
  "--profile": "--device-profile",
  "--oracle": "--rules",
  "--base": "--kernel",
} as const;
export type OldSpelling = keyof typeof OLD_SPELLINGS;

/** The notice an old spelling prints (once per use). */
export function oldSpellingNotice(old: OldSpelling): string {
  return `hil: notice: ${old} is now ${OLD_SPELLINGS[old]} (the old spelling still works)`;
}

/**
 * Adds `old` (e.g. "--profile <name|file>") to `cmd` as a hidden spelling of the option it was
 * renamed to, which `cmd` must already have: its value goes to that option (through the same
 * parser), with a notice. Both spellings in one command line is an error.
 */
export function addOldSpelling(cmd: Command, oldFlags: string): Command {
  const old = new Option(oldFlags).hideHelp();
  const oldLong = old.long as OldSpelling;
  const nowLong = OLD_SPELLINGS[oldLong];
  const now = cmd.options.find((o) => o.long === nowLong);
  if (!now) throw new Error(`${cmd.name()}: ${oldLong} is a spelling of ${nowLong}, which it does not have`);
  if (now.parseArg) old.argParser(now.parseArg);
  cmd.addOption(old);
  const both = () =>
    new HilError(`${oldLong} is the old spelling of ${nowLong}: give ${nowLong} once, without ${oldLong}`);
  let oldUsed = false;
  cmd.on(`option:${old.name()}`, () => {
    if (cmd.getOptionValueSource(now.attributeName()) === "cli") throw both();
    oldUsed = true;
    progress.info(oldSpellingNotice(oldLong));
    cmd.setOptionValueWithSource(
      now.attributeName(),
      cmd.getOptionValue(old.attributeName()),
      "old-spelling",
    );
  });
  cmd.on(`option:${now.name()}`, () => {
    if (oldUsed) throw both();
  });
  return cmd;
}
