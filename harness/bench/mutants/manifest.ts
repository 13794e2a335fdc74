/**
 * The mutation campaign's manifest (fixtures/mutants/mutants.yaml): patch series against
 * debian:6.12's drivers (erdma, siw, rxe), each a mutant (one drain/flush mistake of a real kind)
 * or a benign change the specifications allow, with the driver the suite runs on to judge it, what
 * it touches and what should catch it. Checked against a schema, then against the series
 * themselves: <name>.mbox exists beside the manifest, parses, carries the [MUTANT]/[BENIGN] tag of
 * its kind and touches exactly the listed paths; the scenarios it names exist and are meant for
 * its driver; every series file there is listed. Each problem names the file, the line and the
 * field.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { HilError } from "../../../util/errors.ts";
import { type YamlProblem, YamlSource } from "../../../util/yaml-source.ts";
import { loadSeries } from "../../kernel/series.ts";
import { parseScenario } from "../../scenario/load.ts";
import { DRIVERS, type DriverName, EXECUTORS, type ExecutorKind } from "../../scenario/schema.ts";
import { matchScenarioFiles } from "../../scenario/select.ts";

export const MANIFEST_FILE = fileURLToPath(
  new URL("../../../fixtures/mutants/mutants.yaml", import.meta.url),
);

const KINDS = ["mutant", "benign"] as const;
export type SeriesKind = (typeof KINDS)[number];
/**
 * A rule of the README's What is judged, or hw-protocol: the judge of the device's trace of how the
 * driver used it (commands for destroyed objects, REFLUSH indexes, doorbells past the queue) being
 * added with scenario premises; a mistake only the device can see names it.
 */
export type RuleRef = number | "hang" | "console" | "hw-protocol";

const ruleRef = z.union([z.number().int().min(1).max(9), z.enum(["hang", "console", "hw-protocol"])]);
const slug = z.string().regex(/^[a-z0-9][a-z0-9-]*$/, "lowercase letters, digits and dashes");

const entrySchema = z
  .strictObject({
    name: slug,
    kind: z.enum(KINDS),
    /** the driver the suite runs on to judge the series (the one it mutates) */
    driver: z.enum(DRIVERS).default("erdma"),
    /** kernel tree paths the series changes, as its diff names them */
    paths: z.array(z.string().regex(/^[\w.+-]+(\/[\w.+-]+)*$/, "a path inside the kernel tree")).min(1),
    /** file:symbol, for readers: erdma_qp.c:erdma_post_send */
    touches: z
      .array(z.string().regex(/^[\w.+-]+\.[ch]:\w+$/, "file:symbol (erdma_qp.c:erdma_post_send)"))
      .min(1),
    class: z.string().trim().min(1),
    /** the rules (README, What is judged) a mutant should break (a benign change breaks none) */
    rules: z.array(ruleRef).min(1).optional(),
    /** scenarios expected to catch it */
    scenarios: z.array(slug).min(1).optional(),
    executors: z.array(z.enum(EXECUTORS)).min(1).default(["kernel"]),
    predict: z.enum(["caught", "survives"]).optional(),
  })
  .superRefine((e, ctx) => {
    if (e.kind === "mutant" && !e.rules)
      ctx.addIssue({ code: "custom", path: ["rules"], message: "a mutant names the rules it should break" });
    if (e.kind === "benign" && e.rules)
      ctx.addIssue({ code: "custom", path: ["rules"], message: "a benign change breaks no rule" });
    if (e.kind === "benign" && e.predict)
      ctx.addIssue({ code: "custom", path: ["predict"], message: "a benign change must never be caught" });
  });

const manifestSchema = z.strictObject({ series: z.array(entrySchema).min(1) });

export interface SeriesEntry {
  name: string;
  kind: SeriesKind;
  driver: DriverName;
  /** the series file, absolute */
  file: string;
  paths: string[];
  touches: string[];
  class: string;
  rules: RuleRef[];
  scenarios: string[];
  executors: ExecutorKind[];
  predict?: "caught" | "survives";
}

export interface Manifest {
  file: string;
  series: SeriesEntry[];
}

const TAG: Record<SeriesKind, string> = { mutant: "[MUTANT]", benign: "[BENIGN]" };

/** The paths a patch series' diffs change (the b/ side of each `diff --git`). */
export function diffPaths(patchTexts: readonly string[]): string[] {
  const paths = new Set<string>();
  for (const text of patchTexts)
    for (const m of text.matchAll(/^diff --git a\/\S+ b\/(\S+)$/gm)) if (m[1]) paths.add(m[1]);
  return [...paths].sort();
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Problems of one entry against its series file; the entry's index locates them in the YAML. */
function checkSeries(
  src: YamlSource,
  i: number,
  e: z.infer<typeof entrySchema>,
  file: string,
): YamlProblem[] {
  if (!existsSync(file))
    return [src.problem(["series", i, "name"], `no series file ${basename(file)} beside the manifest`)];
  let patches: { subject: string; text: string }[];
  try {
    patches = loadSeries(file).patches;
  } catch (err) {
    return [src.problem(["series", i, "name"], `${basename(file)}: ${(err as Error).message}`)];
  }
  const problems: YamlProblem[] = [];
  const untagged = patches.filter((p) => !p.subject.startsWith(TAG[e.kind]));
  if (untagged.length > 0)
    problems.push(
      src.problem(
        ["series", i, "kind"],
        `a ${e.kind}'s patches are tagged ${TAG[e.kind]}; "${untagged[0]?.subject}" is not`,
      ),
    );
  const touched = diffPaths(patches.map((p) => p.text));
  if (!sameSet(touched, e.paths))
    problems.push(
      src.problem(
        ["series", i, "paths"],
        `the series changes ${touched.join(", ") || "nothing"}, not ${e.paths.join(", ")}`,
      ),
    );
  return problems;
}

/** Why a series cannot name this scenario: there is none by that name, or it does not run on the driver. */
function scenarioProblem(name: string, driver: DriverName): string | undefined {
  const files = matchScenarioFiles(name);
  if (files.length !== 1) return `no scenario "${name}" in fixtures/scenarios`;
  const file = files[0] as string;
  const { drivers, workload } = parseScenario(readFileSync(file, "utf8"), file);
  if (!drivers.includes(driver))
    return `scenario "${name}" does not run on ${driver} (drivers: ${drivers.join(", ")})`;
  if (workload !== "verbs")
    return `scenario "${name}" runs the ${workload} workload, which needs --config ulp: the campaign's kernels have none`;
  return undefined;
}

/** Parses and checks a manifest; series files are looked up in the manifest's directory. */
export function parseManifest(text: string, file: string): Manifest {
  const src = YamlSource.parse(text, file);
  const spec = src.check(manifestSchema);
  const dir = dirname(resolve(file));
  const problems: YamlProblem[] = [];
  const seen = new Map<string, number>();
  const series: SeriesEntry[] = spec.series.map((e, i) => {
    const first = seen.get(e.name);
    if (first !== undefined)
      problems.push(src.problem(["series", i, "name"], `"${e.name}" is also the name of series[${first}]`));
    else seen.set(e.name, i);
    const seriesFile = join(dir, `${e.name}.mbox`);
    problems.push(...checkSeries(src, i, e, seriesFile));
    (e.scenarios ?? []).forEach((s, j) => {
      const problem = scenarioProblem(s, e.driver);
      if (problem) problems.push(src.problem(["series", i, "scenarios", j], problem));
    });
    return {
      name: e.name,
      kind: e.kind,
      driver: e.driver,
      file: seriesFile,
      paths: e.paths,
      touches: e.touches,
      class: e.class,
      rules: e.rules ?? [],
      scenarios: e.scenarios ?? [],
      executors: e.executors,
      ...(e.predict ? { predict: e.predict } : {}),
    };
  });
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith(".mbox"))
    .sort())
    if (!seen.has(f.replace(/\.mbox$/, "")))
      problems.push(src.problem(["series"], `${f} is a series file the manifest does not list`));
  src.rejectAny(problems);
  return { file: resolve(file), series };
}

export async function loadManifest(file = MANIFEST_FILE): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new HilError("cannot read the mutants manifest", { where: file, detail: (err as Error).message });
  }
  return parseManifest(text, file);
}

/** The entries `only` names (all without it), in manifest order; an unknown name is an error. */
export function selectSeries(manifest: Manifest, only: readonly string[] | undefined): SeriesEntry[] {
  if (!only || only.length === 0) return manifest.series;
  const known = new Set(manifest.series.map((s) => s.name));
  const unknown = only.filter((n) => !known.has(n));
  if (unknown.length > 0)
    throw new HilError(`--only: no series ${unknown.map((n) => `"${n}"`).join(", ")} in the manifest`, {
      where: manifest.file,
      detail: `known: ${[...known].join(", ")}`,
    });
  return manifest.series.filter((s) => only.includes(s.name));
}
