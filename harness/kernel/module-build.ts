/**
 * Rebuilding modules in a finished O= build tree with Kbuild's single-target build, `make
 * <dir>/<module>.ko ...`: an in-tree build (modinfo intree=Y, unlike an M= build, which the kernel
 * taints as out-of-tree) that descends only into the modules' directories. It is given every
 * module of the build, so modpost resolves their symbols against each other as `make modules`
 * does. Two things it leaves differently: it deletes modules.order (put back as it was), and it
 * writes Module.symvers with the modules in sorted order (put back in modules.order's order, the
 * order a whole build writes).
 */
import { readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";

/** The make targets: every module of modules.order as its .ko ("drivers/x/a.o" -> "drivers/x/a.ko"). */
export function moduleTargets(modulesOrder: string): string[] {
  return modulesOrder
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => l.replace(/\.(o|ko)$/, ".ko"));
}

/** Module.symvers with its lines grouped by module: vmlinux, then the modules in `modulesOrder`'s order. */
export function symversInModuleOrder(symvers: string, modulesOrder: string): string {
  const rank = new Map<string, number>([["vmlinux", 0]]);
  moduleTargets(modulesOrder).forEach((ko, i) => {
    rank.set(ko.replace(/\.ko$/, ""), i + 1);
  });
  const lines = symvers.split("\n").filter(Boolean);
  const ranked = lines.map((line, i) => ({ line, i, r: rank.get(line.split("\t")[2] ?? "") ?? rank.size }));
  ranked.sort((a, b) => a.r - b.r || a.i - b.i);
  return ranked.map((x) => `${x.line}\n`).join("");
}

/** What the module build changes in the tree's records, saved before it runs. */
export async function saveModuleRecords(buildDir: string) {
  const orderPath = join(buildDir, "modules.order");
  let order: string;
  try {
    order = await readFile(orderPath, "utf8");
  } catch {
    throw new HilError("the base build has no modules.order", { where: buildDir });
  }
  const { atime, mtime } = await stat(orderPath);
  return { order, atime, mtime };
}

/** Puts modules.order back and Module.symvers in a whole build's order. */
export async function restoreModuleRecords(
  buildDir: string,
  saved: Awaited<ReturnType<typeof saveModuleRecords>>,
): Promise<void> {
  const orderPath = join(buildDir, "modules.order");
  await writeFile(orderPath, saved.order);
  await utimes(orderPath, saved.atime, saved.mtime);
  const symversPath = join(buildDir, "Module.symvers");
  const { atime, mtime } = await stat(symversPath);
  await writeFile(symversPath, symversInModuleOrder(await readFile(symversPath, "utf8"), saved.order));
  await utimes(symversPath, atime, mtime);
}
