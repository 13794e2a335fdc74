/**
 * Reads scenario files: YAML parsed with node ranges kept, checked against the schema; every
 * problem is reported as "file:line:col: field: what is wrong", the first one as the message.
 */
import { basename, extname } from "node:path";
import { YamlSource } from "../../util/yaml-source.ts";
import { sharedBugsOf } from "./known-bug.ts";
import { type Scenario, scenarioSchema } from "./schema.ts";

function scenarioOf(src: YamlSource): Scenario {
  const data = src.check(scenarioSchema);
  const stepLines = data.steps.map((_, i) => src.position(["steps", i]).line);
  const name = data.name ?? basename(src.file, extname(src.file));
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name))
    src.reject([
      { line: 1, col: 1, field: "name", message: `"${name}": lowercase letters, digits and dashes` },
    ]);
  const named = data.known_bugs ?? [];
  const implied = sharedBugsOf(name).filter((b) => !named.some((x) => x.id === b.id));
  const known_bugs = [...named, ...implied];
  return { ...data, ...(known_bugs.length > 0 ? { known_bugs } : {}), name, file: src.file, stepLines };
}

/** Parses and checks scenario text; `file` names it in errors. */
export function parseScenario(text: string, file: string): Scenario {
  return scenarioOf(YamlSource.parse(text, file));
}

export async function loadScenarioFile(file: string): Promise<Scenario> {
  return scenarioOf(await YamlSource.read(file, "scenario"));
}
