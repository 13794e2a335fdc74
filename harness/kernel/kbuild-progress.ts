import { existsSync, readFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { cacheRoot } from "../../util/cache.ts";
import { makeDir } from "../../util/make-dir.ts";

/** A Kbuild quiet-mode line: "  CC      init/main.o", "  CC [M]  drivers/x.o", "  LD      vmlinux". */
const KBUILD_LINE = /^ {2}([A-Z][A-Z0-9_-]*)(?: \[M\])?\s+(\S.*)$/;

export interface KbuildStep {
  tag: string;
  target: string;
  isObject: boolean;
}

export function parseKbuildLine(line: string): KbuildStep | undefined {
  const m = KBUILD_LINE.exec(line);
  if (!m?.[1] || !m[2]) return undefined;
  const target = m[2].trim();
  return { tag: m[1], target, isObject: /^(CC|AS)$/.test(m[1]) && target.endsWith(".o") };
}

/** Counts Kbuild steps (every quiet-mode line) and the objects among them (CC/AS of a .o). */
export class KbuildCounter {
  steps = 0;
  objects = 0;
  last: KbuildStep | undefined;

  /** Returns true if the line was a Kbuild step. */
  feed(line: string): boolean {
    const step = parseKbuildLine(line);
    if (!step) return false;
    this.steps++;
    if (step.isObject) this.objects++;
    this.last = step;
    return true;
  }
}

/** What the last finished build of a kernel version counted; the progress total of the next one. */
export interface BuildStats {
  steps: number;
  objects: number;
  seconds: number;
}

export function statsFile(): string {
  return join(cacheRoot(), "kernel", "build-stats.json");
}

export function readStats(file = statsFile()): Record<string, BuildStats> {
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, BuildStats>;
  } catch {
    return {};
  }
}

export async function recordStats(label: string, stats: BuildStats, file = statsFile()): Promise<void> {
  const all = { ...readStats(file), [label]: stats };
  await makeDir(dirname(file));
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, `${JSON.stringify(all, null, 2)}\n`);
  await rename(tmp, file);
}
