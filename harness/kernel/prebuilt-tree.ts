/**
 * The guest's /lib/modules/<release> for a prebuilt kernel: the modules of GUEST_MODULES and what
 * they depend on, taken from the image (decompressed: Debian xz-compresses every module,
 * CONFIG_MODULE_COMPRESS_XZ, and the guest's busybox modprobe reads plain .ko files), the drivers
 * built out of tree at the path an in-tree build installs them at, then depmod over that tree.
 */
import { copyFile, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { makeDir } from "../../util/make-dir.ts";
import { GUEST_MODULES, moduleClosure, moduleNameOfFile } from "./prebuilt-modules.ts";
import type { BuiltDriverModule } from "./prebuilt-oot.ts";
import { inStep } from "./step.ts";

/** Every module file below `dir` (relative paths). */
async function moduleFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await moduleFiles(dir, rel)));
    else if (/\.ko(\.xz)?$/.test(e.name)) out.push(rel);
  }
  return out;
}

async function modinfoDepends(file: string): Promise<string[]> {
  const r = await run(`modinfo ${file}`, "modinfo", ["-F", "depends", file]);
  return r.stdout
    .trim()
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Writes `<root>/lib/modules/<release>` from the image's module directory `imageModules` and the
 * out-of-tree modules; returns the module names it holds.
 */
export async function writeGuestModules(
  imageModules: string,
  outOfTree: readonly BuiltDriverModule[],
  root: string,
  release: string,
): Promise<string[]> {
  return inStep(
    `[kernel] picking the guest's modules of ${release}`,
    async () => {
      const files = new Map<string, { source: string; installPath: string }>();
      for (const rel of await moduleFiles(imageModules))
        files.set(moduleNameOfFile(rel), {
          source: join(imageModules, rel),
          installPath: rel.replace(/\.xz$/, ""),
        });
      for (const m of outOfTree)
        files.set(moduleNameOfFile(m.name), { source: m.path, installPath: m.installPath });
      const builtin = (await readFile(join(imageModules, "modules.builtin"), "utf8"))
        .split("\n")
        .filter(Boolean)
        .map(moduleNameOfFile);
      const { modules, missing } = await moduleClosure(GUEST_MODULES, new Set(files.keys()), (name) =>
        modinfoDepends(files.get(name)?.source ?? name),
      );
      const absent = missing.filter((m) => !builtin.includes(m));
      if (absent.length > 0)
        throw new HilError(`the kernel ${release} has no module ${absent.join(", ")}, built in or not`, {
          where: imageModules,
        });
      const dest = join(root, "lib", "modules", release);
      const compressed: string[] = [];
      for (const name of modules) {
        const f = files.get(name);
        if (!f) continue;
        const to = join(dest, f.installPath);
        await makeDir(dirname(to));
        const xz = f.source.endsWith(".xz");
        await copyFile(f.source, xz ? `${to}.xz` : to);
        if (xz) compressed.push(`${to}.xz`);
      }
      if (compressed.length > 0) await run("xz -d (modules)", "xz", ["-d", "-f", ...compressed]);
      for (const name of ["modules.builtin", "modules.builtin.modinfo"])
        await copyFile(join(imageModules, name), join(dest, name));
      const installed = modules.flatMap((n) => {
        const f = files.get(n);
        return f ? [f.installPath] : [];
      });
      const imageOrder = (await readFile(join(imageModules, "modules.order"), "utf8"))
        .split("\n")
        .filter(Boolean);
      const order = [
        ...imageOrder.filter((p) => installed.includes(p)),
        ...installed.filter((p) => !imageOrder.includes(p)),
      ];
      await writeFile(join(dest, "modules.order"), `${order.join("\n")}\n`);
      await run("depmod", "depmod", ["-b", root, release]);
      return modules;
    },
    (modules) => `${modules.length} modules`,
  );
}
