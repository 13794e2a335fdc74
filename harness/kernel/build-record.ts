/**
 * What a finished O= build tree records about itself: every target's command and dependencies in
 * its .cmd file (and a few .d files), written by Kbuild's fixdep with source files as absolute
 * paths under the source tree; the modules in modules.order and their objects in <module>.mod.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { probe } from "../../util/exec.ts";
import { escapeEre, PATH_END_ERE, trimPathEnd } from "./path-match.ts";

/** The target a record file describes: "drivers/x/.a.o.cmd" -> "drivers/x/a.o". */
export function recordTarget(recordPath: string): string {
  const name = basename(recordPath)
    .replace(/\.(cmd|d)$/, "")
    .replace(/^\./, "");
  const dir = dirname(recordPath);
  return dir === "." ? name : `${dir}/${name}`;
}

/**
 * Greps every .cmd and .d file of `buildDir` for `patterns` (EREs matching a whole path under
 * `srcDir`, without the prefix); returns each matched path (relative to `srcDir`) with the
 * targets whose records name it.
 */
async function grepRecords(buildDir: string, srcDir: string, patterns: readonly string[]) {
  const found = new Map<string, Set<string>>();
  if (patterns.length === 0) return found;
  const prefix = `${srcDir}/`;
  const args = ["-rZoE", "--include=*.cmd", "--include=*.d"];
  for (const p of patterns) args.push("-e", `${escapeEre(prefix)}${p}${PATH_END_ERE}`);
  const r = await probe("grep", [...args, "."], { cwd: buildDir });
  if (r.exitCode > 1)
    throw new HilError("cannot read the base build's dependency records", {
      where: buildDir,
      detail: r.stderr,
    });
  for (const line of r.stdout.split("\n")) {
    const nul = line.indexOf("\0");
    if (nul < 0) continue;
    const record = line.slice(0, nul).replace(/^\.\//, "");
    const path = trimPathEnd(line.slice(nul + 1 + prefix.length));
    const targets = found.get(path) ?? new Set<string>();
    targets.add(recordTarget(record));
    found.set(path, targets);
  }
  return found;
}

const sorted = (s: Iterable<string> | undefined) => [...(s ?? [])].sort();

/** For each path (relative to the source tree): the targets of the build that use it, sorted. */
export async function targetsUsing(
  buildDir: string,
  srcDir: string,
  paths: readonly string[],
): Promise<Map<string, string[]>> {
  const found = await grepRecords(buildDir, srcDir, paths.map(escapeEre));
  return new Map(paths.map((p) => [p, sorted(found.get(p))]));
}

/** For each header path: the other headers of the same file name the build used, sorted. */
export async function sameNamedHeaders(
  buildDir: string,
  srcDir: string,
  headers: readonly string[],
): Promise<Map<string, string[]>> {
  const names = [...new Set(headers.map((h) => basename(h)))];
  const found = await grepRecords(
    buildDir,
    srcDir,
    names.map((n) => `([^[:space:]]*/)?${escapeEre(n)}`),
  );
  return new Map(
    headers.map((h) => [h, sorted([...found.keys()].filter((p) => p !== h && basename(p) === basename(h)))]),
  );
}

/**
 * Which module each module target belongs to: the objects listed in <module>.mod and the module's
 * own intermediates (<m>.o, <m>.mod, <m>.mod.c, <m>.mod.o, <m>.ko), mapped to "<m>.ko".
 */
export function readModuleMap(buildDir: string): Map<string, string> {
  const order = join(buildDir, "modules.order");
  if (!existsSync(order)) throw new HilError("the base build has no modules.order", { where: buildDir });
  const map = new Map<string, string>();
  for (const line of readFileSync(order, "utf8").split("\n")) {
    const m = line.trim().replace(/\.(o|ko)$/, "");
    if (!m) continue;
    const ko = `${m}.ko`;
    for (const suffix of [".o", ".mod", ".mod.c", ".mod.o", ".ko"]) map.set(`${m}${suffix}`, ko);
    const modFile = join(buildDir, `${m}.mod`);
    if (!existsSync(modFile)) throw new HilError(`the base build has no ${m}.mod`, { where: buildDir });
    for (const part of readFileSync(modFile, "utf8").split(/\s+/)) if (part) map.set(part, ko);
  }
  return map;
}
