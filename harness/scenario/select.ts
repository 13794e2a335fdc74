/**
 * Which scenario files a --scenario pattern means: names in fixtures/scenarios ("drain-*") or
 * paths ("my/dir/*.yaml"); several patterns separated by commas.
 */
import { readdirSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { HilError } from "../../util/errors.ts";
import { globToRegExp } from "../../util/glob.ts";
import { loadScenarioFile } from "./load.ts";
import type { Scenario } from "./schema.ts";

export { globToRegExp };

export const SCENARIO_DIR = fileURLToPath(new URL("../../fixtures/scenarios/", import.meta.url));

function yamlFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw new HilError("cannot list scenario files", { where: dir, detail: (err as Error).message });
  }
  return names
    .filter((n) => n.endsWith(".yaml") || n.endsWith(".yml"))
    .map((n) => join(dir, n))
    .filter((f) => statSync(f).isFile())
    .sort();
}

/** The files one pattern names; a plain name or glob without "/" looks in `dir` by scenario name. */
export function matchScenarioFiles(pattern: string, dir = SCENARIO_DIR): string[] {
  if (!pattern.includes("/")) {
    const re = globToRegExp(pattern.replace(/\.ya?ml$/, ""));
    return yamlFiles(dir).filter((f) => re.test(basename(f, extname(f))));
  }
  const abs = resolve(pattern);
  const firstGlob = abs.search(/[*?{]/);
  if (firstGlob < 0) return [abs];
  const base = dirname(abs.slice(0, firstGlob + 1));
  const re = globToRegExp(abs);
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (re.test(p) && /\.ya?ml$/.test(p)) out.push(p);
    }
  };
  walk(base);
  return out.sort();
}

/** The files the patterns select (all of `dir` without patterns), each once; a pattern must match. */
export function selectScenarioFiles(patterns: string | undefined, dir = SCENARIO_DIR): string[] {
  const list = (patterns ?? "*")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  const files = new Set<string>();
  for (const p of list) {
    const found = matchScenarioFiles(p, dir);
    if (found.length === 0) throw new HilError(`no scenario matches "${p}"`, { where: dir });
    for (const f of found) files.add(f);
  }
  return [...files];
}

/** Loads the scenarios the patterns select (all of `dir` without patterns); names must be unique. */
export async function selectScenarios(patterns: string | undefined, dir = SCENARIO_DIR): Promise<Scenario[]> {
  const files = selectScenarioFiles(patterns, dir);
  const scenarios: Scenario[] = [];
  const byName = new Map<string, string>();
  for (const f of files) {
    const s = await loadScenarioFile(f);
    const other = byName.get(s.name);
    if (other) throw new HilError(`scenario name "${s.name}" is also the name of ${other}`, { where: f });
    byName.set(s.name, f);
    scenarios.push(s);
  }
  return scenarios;
}
