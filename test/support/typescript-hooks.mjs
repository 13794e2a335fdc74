// Module hooks (registered by typescript-loader.mjs) that compile the project's TypeScript for tap's
// test processes with esbuild. Unlike tsx, which prints each module on one line, the output keeps
// the code's lines, so c8's line coverage of these processes maps back to the sources statement by
// statement; and unlike ts-node (tap's TypeScript plugin), it does not spend a second or more of
// CPU compiling each test process's modules (the unit tier took 0.57 times the CPU, 2026-12-07).
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { transform } from "esbuild";

const TYPESCRIPT = /\.ts$/;
// the options of tsconfig.json that change what esbuild emits (not what it checks: tsc does that)
const TSCONFIG = { compilerOptions: { target: "ES2022", useDefineForClassFields: true } };

export async function load(url, context, nextLoad) {
  if (!url.startsWith("file:") || !TYPESCRIPT.test(new URL(url).pathname)) return nextLoad(url, context);
  const source = await readFile(fileURLToPath(url), "utf8");
  const compiled = await transform(source, {
    loader: "ts",
    format: "esm",
    target: `node${process.versions.node}`,
    sourcemap: "inline",
    sourcefile: url,
    tsconfigRaw: TSCONFIG,
  });
  return { format: "module", source: compiled.code, shortCircuit: true };
}
