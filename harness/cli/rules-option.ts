import { type Command, InvalidArgumentError } from "commander";
import { ORACLE_PROFILES, type OracleProfile } from "../scenario/schema.ts";
import { addOldSpelling } from "./old-spellings.ts";

/** --rules: comma-separated rule sets of the oracle (ib, iwarp-rdmac, linux). */
export function ruleSetList(value: string): OracleProfile[] {
  const list = value.split(",").map((v) => v.trim());
  for (const v of list)
    if (!(ORACLE_PROFILES as readonly string[]).includes(v))
      throw new InvalidArgumentError(
        `"${v}" is not a rule set of the oracle (${ORACLE_PROFILES.join(", ")})`,
      );
  return list as OracleProfile[];
}

/** --rules and its old spelling --oracle (hil run, hil validate). */
export function addRulesOption(cmd: Command, what: string): Command {
  return addOldSpelling(
    cmd.option(
      "--rules <sets>",
      `${what} under these rule sets of the oracle only (comma-separated: ${ORACLE_PROFILES.join(", ")}; default: each scenario's own)`,
      ruleSetList,
    ),
    "--oracle <sets>",
  );
}
