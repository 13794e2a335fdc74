/**
 * YAML files users write (scenarios, matrix plans, repro cases): parsed with node ranges kept and
 * checked against a zod schema; every problem is "file:line:col: field: what is wrong", the first
 * one as the message. Checks made after the schema (a profile that does not exist, a scenario no
 * pattern matches) point at their field the same way.
 */
import { isMap, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import type { z } from "zod";
import { HilError, isHilError } from "./errors.ts";
import { readUserText, type UserFileKind } from "./user-file.ts";

export type YamlPath = readonly PropertyKey[];

export interface YamlProblem {
  line: number;
  col: number;
  /** the field as a dotted path, e.g. expect[2].rules.9 */
  field: string;
  message: string;
}

export function fieldName(path: YamlPath): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : `${out ? "." : ""}${String(p)}`;
  return out || "(file)";
}

/** A parsed YAML file: its data and where each path of it is. */
export class YamlSource {
  private constructor(
    readonly file: string,
    private readonly root: Node | null,
    private readonly lines: LineCounter,
    readonly data: unknown,
  ) {}

  /** Parses `text`; YAML syntax errors (and duplicate keys) are rejected with their positions. */
  static parse(text: string, file: string): YamlSource {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    const src = new YamlSource(file, doc.contents as Node | null, lines, undefined);
    if (doc.errors.length > 0)
      src.reject(
        doc.errors.map((e) => {
          const pos = lines.linePos(e.pos[0]);
          return { line: pos.line, col: pos.col, field: "(yaml)", message: e.message.split("\n")[0] ?? "" };
        }),
      );
    return new YamlSource(file, src.root, lines, doc.toJS());
  }

  /** Reads a user's file of that kind (its size bounded by USER_FILE_LIMITS) and parses it. */
  static read(file: string, kind: UserFileKind): YamlSource {
    let text: string;
    try {
      text = readUserText(file, kind);
    } catch (err) {
      if (isHilError(err)) throw err;
      throw new HilError(`cannot read the ${kind} file`, { where: file, detail: (err as Error).message });
    }
    return YamlSource.parse(text, file);
  }

  /** The line and column of the deepest node `path` reaches (a present key: its key node). */
  position(path: YamlPath): { line: number; col: number } {
    let node: unknown = this.root;
    let offset = this.root?.range?.[0] ?? 0;
    for (const key of path) {
      if (isMap(node)) {
        const pair = node.items.find(
          (p) => String((p.key as { value?: unknown } | null)?.value) === String(key),
        );
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
    return this.lines.linePos(offset);
  }

  problem(path: YamlPath, message: string): YamlProblem {
    return { ...this.position(path), field: fieldName(path), message };
  }

  /** Checks the data against `schema`; the schema's issues become positioned problems. */
  check<T>(schema: z.ZodType<T>): T {
    const r = schema.safeParse(this.data);
    if (r.success) return r.data;
    const problems: YamlProblem[] = [];
    for (const issue of r.error.issues) {
      if (issue.code === "unrecognized_keys")
        for (const k of issue.keys) problems.push(this.problem([...issue.path, k], "unknown field"));
      else problems.push(this.problem(issue.path, issue.message));
    }
    this.reject(problems);
  }

  /** Throws one HilError: the first problem as the message, the others as its detail. */
  reject(problems: readonly YamlProblem[]): never {
    const sorted = [...problems].sort((a, b) => a.line - b.line || a.col - b.col);
    const [first, ...rest] = sorted;
    if (!first) throw new HilError("invalid file", { where: this.file });
    throw new HilError(`${first.field}: ${first.message}`, {
      where: `${this.file}:${first.line}:${first.col}`,
      detail: rest.length
        ? rest.map((p) => `${this.file}:${p.line}:${p.col}: ${p.field}: ${p.message}`).join("\n")
        : undefined,
    });
  }

  /** Rejects the problems, if there are any. */
  rejectAny(problems: readonly YamlProblem[]): void {
    if (problems.length > 0) this.reject(problems);
  }
}
