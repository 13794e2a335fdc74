/**
 * Drivers a prebuilt kernel's config leaves out, built out of tree against its headers from the
 * same version's linux-source: one Kbuild run (M=) over copies of their directories, so modpost
 * resolves their symbols against each other (rnbd against rtrs) and against the image's
 * Module.symvers. Their options are given =m on make's command line, as the Makefiles read them.
 */
import { cp, readFile, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { HilError, isHilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { makeDir } from "../../util/make-dir.ts";
import type { OutOfTreeDriver } from "./prebuilt-modules.ts";
import { inStep } from "./step.ts";

/** The headers trees: srcDir is -common (make -C), buildDir is -<flavour> (O=). */
export interface HeadersTree {
  srcDir: string;
  buildDir: string;
}

/** Where a driver's copy lies in the M= directory: its source path, so includes between them keep working. */
function copyDir(work: string, dir: string): string {
  return join(work, dir);
}

/** The make arguments for the drivers (pure, for tests). */
export function outOfTreeMakeArgs(
  tree: HeadersTree,
  work: string,
  drivers: readonly OutOfTreeDriver[],
): string[] {
  const options = [...new Set(drivers.flatMap((d) => d.options))].map((o) => `CONFIG_${o}=m`);
  const includes = [...new Set(drivers.flatMap((d) => d.includes ?? []))].map((d) => `-I${copyDir(work, d)}`);
  return [
    "-C",
    tree.srcDir,
    `O=${tree.buildDir}`,
    `M=${work}`,
    `-j${Math.max(1, availableParallelism())}`,
    ...options,
    ...(includes.length > 0 ? [`KCFLAGS=${includes.join(" ")}`] : []),
    "modules",
  ];
}

/** The Kbuild file of the M= directory: each driver's directory as a subdirectory. */
export function outOfTreeKbuild(drivers: readonly OutOfTreeDriver[]): string {
  return `${drivers.map((d) => `obj-m += ${d.dir}/`).join("\n")}\n`;
}

export interface BuiltDriverModule {
  name: string;
  /** the .ko in `work` */
  path: string;
  /** where it goes below lib/modules/<release>/: the path an in-tree build installs it at */
  installPath: string;
}

/**
 * Builds `drivers` from `sourceRoot` (a kernel source tree, or the part of one holding their
 * directories) in `work`; the build's output goes to `log`. Returns the modules, debug info stripped.
 */
export async function buildOutOfTree(
  tree: HeadersTree,
  sourceRoot: string,
  drivers: readonly OutOfTreeDriver[],
  work: string,
  log: string,
  release: string,
): Promise<BuiltDriverModule[]> {
  const names = drivers.flatMap((d) => d.modules);
  return inStep(
    `[kernel] building ${names.join(", ")} out of tree for ${release}`,
    async () => {
      await makeDir(work);
      for (const d of drivers) await cp(join(sourceRoot, d.dir), copyDir(work, d.dir), { recursive: true });
      await writeFile(join(work, "Kbuild"), outOfTreeKbuild(drivers));
      const output: string[] = [];
      try {
        await run("make (out-of-tree drivers)", "make", outOfTreeMakeArgs(tree, work, drivers), {
          onLine: (l) => output.push(l),
          tailLines: 40,
        });
      } catch (err) {
        if (!isHilError(err)) throw err;
        throw new HilError(`building ${names.join(", ")} against the headers of ${release} failed`, {
          where: work,
          detail:
            output
              .filter((l) => /error|undefined!/i.test(l))
              .slice(0, 30)
              .join("\n") || output.slice(-30).join("\n"),
          cause: err,
        });
      } finally {
        await writeFile(log, `${output.join("\n")}\n`);
      }
      const built: BuiltDriverModule[] = [];
      for (const d of drivers)
        for (const m of d.modules) {
          const path = join(copyDir(work, d.dir), `${m}.ko`);
          await run(`strip ${m}.ko`, "strip", ["--strip-debug", path]);
          const magic = await vermagicRelease(path);
          if (magic !== release)
            throw new HilError(`${m}.ko was built for ${magic ?? "no release"}, not ${release}`, {
              where: path,
              detail: "the headers tree does not belong to the image it was unpacked with",
            });
          built.push({ name: m, path, installPath: join("kernel", d.dir, `${m}.ko`) });
        }
      return built;
    },
    (b) => `${b.length} module(s)`,
  );
}

/** The release a module file's vermagic names (a module built against other headers does not load). */
export async function vermagicRelease(path: string): Promise<string | undefined> {
  const text = (await readFile(path)).toString("latin1");
  return /vermagic=(\S+)/.exec(text)?.[1];
}
