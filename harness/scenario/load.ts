/**
 * Reads scenario files: YAML parsed with node ranges kept, checked against the schema; every
 * problem is reported as "file:line:col: field: what is wrong", the first one as the message.
 */
import { readFile } from "node:fs/promises";
import { basename, extname } from "node:path";
import { isMap, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { z } from "zod";
import { HilError } from "../util/errors.ts";
import { type Scenario, scenarioSchema } from "./schema.ts";

export interface ScenarioProblem {
  line: number;
  col: number;
  /** the field as a dotted path, e.g. steps[2].post_send.count */
  field: string;
  message: string;
}

type Path = readonly PropertyKey[];

function fieldName(path: Path): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : `${out ? "." : ""}${String(p)}`;
  return out || "(file)";
}

/** The deepest node the path reaches; for a key that is present, its key node. */
function locate(root: Node | null, path: Path): { offset: number } {
  let node: unknown = root;
  let offset = root?.range?.[0] ?? 0;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      if (!pair) break;
      offset = (pair.key as Node | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof key === "number") {
      const item = node.items[key] as Node | undefined;
      if (!item) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else break;
  }
  return { offset };
}

function problemsOf(
  issues: readonly z.core.$ZodIssue[],
  root: Node | null,
  lines: LineCounter,
): ScenarioProblem[] {
  const out: ScenarioProblem[] = [];
  for (const issue of issues) {
    const paths: { path: Path; message: string }[] =
      issue.code === "unrecognized_keys"
        ? issue.keys.map((k) => ({ path: [...issue.path, k], message: "unknown field" }))
        : [{ path: issue.path, message: issue.message }];
    for (const p of paths) {
      const { line, col } = lines.linePos(locate(root, p.path).offset);
      out.push({ line, col, field: fieldName(p.path), message: p.message });
    }
  }
  return out.sort((a, b) => a.line - b.line || a.col - b.col);
}

function reject(file: string, problems: readonly ScenarioProblem[]): never {
  const [first, ...rest] = problems;
  if (!first) throw new HilError("invalid scenario", { where: file });
  throw new HilError(`${first.field}: ${first.message}`, {
    where: `${file}:${first.line}:${first.col}`,
    detail: rest.length
      ? rest.map((p) => `${file}:${p.line}:${p.col}: ${p.field}: ${p.message}`).join("\n")
      : undefined,
  });
}

/** Parses and checks scenario text; `file` names it in errors. */
export function parseScenario(text: string, file: string): Scenario {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const yamlErrors = [...doc.errors];
  if (yamlErrors.length > 0) {
    reject(
      file,
      yamlErrors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        return { line: pos.line, col: pos.col, field: "(yaml)", message: e.message.split("\n")[0] ?? "" };
      }),
    );
  }
  const root = doc.contents as Node | null;
  const r = scenarioSchema.safeParse(doc.toJS());
  if (!r.success) reject(file, problemsOf(r.error.issues, root, lines));
  const stepLines = r.data.steps.map((_, i) => lines.linePos(locate(root, ["steps", i]).offset).line);
  const name = r.data.name ?? basename(file, extname(file));
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name))
    reject(file, [
      { line: 1, col: 1, field: "name", message: `"${name}": lowercase letters, digits and dashes` },
    ]);
  return { ...r.data, name, file, stepLines };
}

export async function loadScenarioFile(file: string): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new HilError("cannot read the scenario file", { where: file, detail: (err as Error).message });
  }
  return parseScenario(text, file);
}
