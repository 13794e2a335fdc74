/**
 * Reads guest/common/commands.def, the C table of the executors' command language, for the test
 * that holds harness/protocol/commands.ts's COMMAND_KEYS to it: its HIL_COMMAND(name, keys, about)
 * entries, whose keys are string literals and the string macros the file #defines (HIL_QP_KEYS).
 */

/** Each operation (in file order) and its keys, true for a required one ('!'). */
export type CommandTable = Map<string, Map<string, boolean>>;

const STRING = /"([^"\\]*)"/y;
const NAME = /[A-Za-z_]\w*/y;
const SPACE = /\s*/y;

function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, " ").replace(/\/\/.*$/gm, " ");
}

/** A C expression of adjacent string literals and string macros, from `at` to the next ','. */
function stringExpression(
  text: string,
  at: number,
  macros: ReadonlyMap<string, string>,
  where: string,
): { value: string; end: number } {
  let value = "";
  let pos = at;
  for (;;) {
    SPACE.lastIndex = pos;
    SPACE.exec(text);
    pos = SPACE.lastIndex;
    STRING.lastIndex = pos;
    const str = STRING.exec(text);
    if (str) {
      value += str[1];
      pos = STRING.lastIndex;
      continue;
    }
    NAME.lastIndex = pos;
    const name = NAME.exec(text);
    if (name) {
      const macro = macros.get(name[0]);
      if (macro === undefined) throw new Error(`${where}: ${name[0]} is not a string macro of commands.def`);
      value += macro;
      pos = NAME.lastIndex;
      continue;
    }
    if (text[pos] !== ",") throw new Error(`${where}: the keys are not string literals and macros`);
    return { value, end: pos };
  }
}

export function parseCommandsDef(source: string): CommandTable {
  const text = withoutComments(source);
  const macros = new Map<string, string>();
  for (const m of text.matchAll(/^#define\s+(\w+)\s+((?:"[^"\\]*"\s*)+)$/gm)) {
    const name = m[1] as string;
    macros.set(name, [...(m[2] as string).matchAll(/"([^"\\]*)"/g)].map((s) => s[1]).join(""));
  }
  const table: CommandTable = new Map();
  const entries = [...text.matchAll(/\bHIL_COMMAND\(\s*(\w+)\s*,/g)];
  for (const e of entries) {
    const op = e[1] as string;
    const where = `HIL_COMMAND(${op})`;
    if (table.has(op)) throw new Error(`${where}: the operation is listed twice`);
    const { value } = stringExpression(text, (e.index ?? 0) + e[0].length, macros, where);
    const keys = new Map<string, boolean>();
    for (const word of value.split(/\s+/).filter(Boolean)) {
      const key = word.replace(/^!/, "");
      if (!/^[a-z0-9_]+$/.test(key)) throw new Error(`${where}: "${word}" is not a key`);
      if (keys.has(key)) throw new Error(`${where}: key ${key} is listed twice`);
      keys.set(key, word.startsWith("!"));
    }
    table.set(op, keys);
  }
  if (table.size === 0) throw new Error("commands.def has no HIL_COMMAND entry");
  return table;
}

/** Where a TypeScript table of the operations' keys differs from commands.def's, one line each. */
export function commandTableDifferences(
  def: CommandTable,
  ts: Readonly<Record<string, Readonly<Record<string, boolean>>>>,
): string[] {
  const out: string[] = [];
  for (const [op, keys] of def) {
    const tsKeys = ts[op];
    if (!tsKeys) {
      out.push(`${op}: in commands.def, not in COMMAND_KEYS`);
      continue;
    }
    for (const [key, required] of keys) {
      const tsRequired = tsKeys[key];
      if (tsRequired === undefined) out.push(`${op}: key ${key} of commands.def is missing`);
      else if (tsRequired !== required)
        out.push(`${op}: key ${key} is ${required ? "required" : "optional"} in commands.def`);
    }
    for (const key of Object.keys(tsKeys))
      if (!keys.has(key)) out.push(`${op}: key ${key} is not in commands.def`);
  }
  for (const op of Object.keys(ts)) if (!def.has(op)) out.push(`${op}: not an operation of commands.def`);
  return out;
}
