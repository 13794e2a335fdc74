// The hook that compiles TypeScript for tap's test processes (test/support/typescript-hooks.mjs):
// its output must map back to the source line by line, or c8's line coverage of the whole gate
// reads wrong (tsx's one-line output made every file 100% covered).
import { writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";
import { tempDir } from "../support/temp-dir.ts";
import { load } from "../support/typescript-hooks.mjs";

const SOURCE = [
  "interface Point {",
  "  x: number;",
  "}",
  "",
  "export function norm(p: Point): number {",
  "  const twice: number = p.x * 2;",
  "  return twice / 2;",
  "}",
  "",
].join("\n");

function neverCalled(): Promise<never> {
  throw new Error("the hook handed a TypeScript file on");
}

/** The inline source map esbuild appended to `code`. */
function inlineMap(code: string): SourceMap {
  const m = /\/\/# sourceMappingURL=data:application\/json;base64,(\S+)\s*$/.exec(code);
  if (!m?.[1]) throw new Error("no inline source map");
  return new SourceMap(JSON.parse(Buffer.from(m[1], "base64").toString("utf8")));
}

t.test("a TypeScript module compiles to JavaScript whose statements map to their own lines", async (t) => {
  const file = join(tempDir(t, "hil-ts-hooks-"), "point.ts");
  writeFileSync(file, SOURCE);
  const url = pathToFileURL(file).href;
  const r = await load(url, {}, neverCalled);
  t.equal(r.format, "module");
  t.equal(r.shortCircuit, true);
  const code = String(r.source);
  t.notMatch(code, /interface|: number/, "the types are gone");
  const lines = code.split("\n");
  t.ok(lines.length > 4, `the output keeps lines (${lines.length}), not one per module`);
  const map = inlineMap(code);
  for (const [needle, sourceLine] of [
    ["export function norm", 4],
    ["const twice", 5],
    ["return twice", 6],
  ] as const) {
    const line = lines.findIndex((l) => l.includes(needle.replace("export ", "")));
    t.ok(line >= 0, `${needle} is in the output`);
    const entry = map.findEntry(line, lines[line]?.search(/\S/) ?? 0) as {
      originalLine?: number;
      originalSource?: string;
    };
    t.equal(entry.originalLine, sourceLine, `${needle} maps to line ${sourceLine + 1} of the source`);
    t.equal(entry.originalSource, url, "the map names the source by its URL");
  }
  const mod = await import(`data:text/javascript,${encodeURIComponent(code)}`);
  t.equal(mod.norm({ x: 3 }), 3, "the compiled module runs");
});

t.test("what is not a TypeScript file goes to the next loader unchanged", async (t) => {
  const seen: string[] = [];
  const next = async (url: string) => {
    seen.push(url);
    return { format: "module", source: "export {};", shortCircuit: true };
  };
  for (const url of ["file:///x/a.mjs", "file:///x/a.json", "node:fs", "file:///x/a.ts.bak"])
    await load(url, {}, next);
  t.same(seen, ["file:///x/a.mjs", "file:///x/a.json", "node:fs", "file:///x/a.ts.bak"]);
});

t.test("a syntax error names the file and the line", async (t) => {
  const file = join(tempDir(t, "hil-ts-hooks-"), "broken.ts");
  writeFileSync(file, "const a: number = 1;\nconst b = (;\n");
  await t.rejects(load(pathToFileURL(file).href, {}, neverCalled), /broken\.ts:2:/);
});
