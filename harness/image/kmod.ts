/**
 * Out-of-tree guest kernel modules: built against a kernel's O= build tree
 * (make -C <srcDir> O=<buildDir> M=<copy of the sources>), cached by (the key of the kernel
 * interface it is built against, hash of the source files, and of the directories it shares
 * sources with: a patched kernel that kept its base's headers, .config and Module.symvers reuses
 * the base's module, harness/kernel/module-interface.ts), and put into the guest either as
 * an initramfs layer (/lib/modules/<release>/extra) or copied in and loaded over SSH.
 */
import type { Dirent } from "node:fs";
import { copyFile, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative } from "node:path";
import type { ExecStream } from "../../qemu/launch/ssh.ts";
import { ensureEntry } from "../../util/cache.ts";
import { HilError, isHilError } from "../../util/errors.ts";
import { run } from "../../util/exec.ts";
import { hashParts, shortKey } from "../../util/hash.ts";
import { makeDir } from "../../util/make-dir.ts";
import { progress } from "../../util/progress.ts";
import { moduleInterfaceKey } from "../kernel/module-interface.ts";
import type { KernelArtifact } from "../kernel/types.ts";
import { type CpioEntry, writeCpioGz } from "./cpio.ts";
import type { ImageLayer } from "./userspace.ts";

/** Bump when the build steps change in a way that changes the artifact. */
const RECIPE = "guest-kmod-2";
const CACHE_KIND = "kmod";
const LAYER_KIND = "image/kmod";
const LAYER_ARCHIVE = "kmod.cpio.gz";
const WARNINGS_FILE = "warnings.txt";

export interface GuestModuleOptions {
  /** the module's name: the build makes <name>.ko */
  name: string;
  /** more make arguments, e.g. ["W=1"] (part of the cache key) */
  makeArgs?: readonly string[];
  /**
   * directories of sources the module shares with other programs: each is copied beside the
   * module's directory under its own name, where the Kbuild finds it as $(src)/../<name>, and its
   * files are part of the cache key
   */
  sharedDirs?: readonly string[];
}

export interface BuiltGuestModule {
  name: string;
  /** the .ko in the cache */
  path: string;
  key: string;
  /** the kernel release it loads into */
  release: string;
  /** compiler and modpost warnings of the build (kept with the cached module) */
  warnings: string[];
}

/** Files a build leaves in a module directory: never part of the sources. */
function isBuildOutput(name: string): boolean {
  return (
    name.startsWith(".") ||
    /\.(o|ko|mod|mod\.c|mod\.o|cmd|order|symvers|a)$/.test(name) ||
    name === "Module.symvers" ||
    name === "modules.order"
  );
}

/** The source files below `sourceDir` (relative paths, sorted), everything but build outputs. */
async function sourceFiles(sourceDir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw new HilError("a source directory of the module cannot be read", {
        where: sourceDir,
        cause: err,
        detail: (err as Error).message,
      });
    }
    for (const e of entries) {
      if (isBuildOutput(e.name)) continue;
      const path = join(dir, e.name);
      if (e.isDirectory()) await walk(path);
      else if (e.isFile()) out.push(relative(sourceDir, path));
    }
  }
  await walk(sourceDir);
  return out.sort();
}

/** The module's source files (relative paths, sorted), everything but build outputs. */
export async function moduleSources(sourceDir: string): Promise<string[]> {
  const out = await sourceFiles(sourceDir);
  if (!out.some((f) => f === "Kbuild" || f === "Makefile"))
    throw new HilError("the module source directory has no Kbuild or Makefile", { where: sourceDir });
  return out;
}

/** The cache kind a guest module's builds are kept under. */
export function guestModuleKind(name: string): string {
  return `${CACHE_KIND}/${name}`;
}

export async function guestModuleKey(
  kernel: Pick<KernelArtifact, "key" | "rebuild">,
  sourceDir: string,
  opts: GuestModuleOptions,
): Promise<string> {
  const parts: (string | Uint8Array)[] = [
    RECIPE,
    moduleInterfaceKey(kernel),
    opts.name,
    ...(opts.makeArgs ?? []),
  ];
  for (const file of await moduleSources(sourceDir)) parts.push(file, await readFile(join(sourceDir, file)));
  for (const dir of opts.sharedDirs ?? []) {
    parts.push("shared", basename(dir));
    for (const file of await sourceFiles(dir)) parts.push(file, await readFile(join(dir, file)));
  }
  return hashParts(parts);
}

/** The module's directory and the shared ones, by the name each has beside the others in the build. */
function buildDirs(sourceDir: string, opts: GuestModuleOptions): Map<string, string> {
  const dirs = new Map<string, string>([[basename(sourceDir), sourceDir]]);
  for (const dir of opts.sharedDirs ?? []) {
    const name = basename(dir);
    if (dirs.has(name))
      throw new HilError(`the shared source directory ${dir} has the name of another (${dirs.get(name)})`, {
        where: sourceDir,
      });
    dirs.set(name, dir);
  }
  return dirs;
}

/** Compiler diagnostics worth showing: "file:line:col: error: ...", modpost's ERROR lines. */
export function errorLines(output: readonly string[]): string[] {
  const picked: string[] = [];
  output.forEach((line, i) => {
    if (/(^|\s)(fatal )?error:|^ERROR:|undefined!|\*\*\* No rule/i.test(line)) {
      picked.push(line);
      // gcc prints the offending source line and a caret under it
      const next = output[i + 1];
      const caret = output[i + 2];
      if (next !== undefined && /^\s*\d+ \|/.test(next)) picked.push(next);
      if (caret !== undefined && /^\s*\|/.test(caret)) picked.push(caret);
    }
  });
  return picked;
}

export function warningLines(output: readonly string[]): string[] {
  return output.filter((l) => /(^|\s)warning:|^WARNING:/i.test(l));
}

/** The .ko for `kernel`, built once per (kernel, sources, options) and cached. */
export async function buildGuestModule(
  kernel: KernelArtifact,
  sourceDir: string,
  opts: GuestModuleOptions,
): Promise<BuiltGuestModule> {
  if (!/^[A-Za-z0-9_-]+$/.test(opts.name))
    throw new HilError(`"${opts.name}" is not a module name`, { where: sourceDir });
  const file = `${opts.name}.ko`;
  const dirs = buildDirs(sourceDir, opts);
  const key = await guestModuleKey(kernel, sourceDir, opts);
  const { dir, built } = await ensureEntry(
    guestModuleKind(opts.name),
    key,
    { what: `${file} for ${kernel.describe}` },
    async (work) => {
      const step = progress.step(`[kmod] building ${file} for Linux ${kernel.release}`);
      const src = join(work, "src");
      const moduleDir = join(src, basename(sourceDir));
      const output: string[] = [];
      try {
        for (const [name, dir] of dirs) {
          for (const f of await sourceFiles(dir)) {
            await makeDir(dirname(join(src, name, f)));
            await copyFile(join(dir, f), join(src, name, f));
          }
        }
        await run(
          `building ${file}`,
          "make",
          [
            "-C",
            kernel.srcDir,
            `O=${kernel.buildDir}`,
            `M=${moduleDir}`,
            ...(opts.makeArgs ?? []),
            "modules",
          ],
          { onLine: (l) => output.push(l), tailLines: 40 },
        );
        await copyFile(join(moduleDir, file), join(work, file));
        await writeFile(join(work, WARNINGS_FILE), warningLines(output).join("\n"));
        await rm(src, { recursive: true, force: true });
        step.succeed();
      } catch (err) {
        step.fail();
        if (!isHilError(err)) throw err;
        const errors = errorLines(output);
        throw new HilError(`building ${file} for Linux ${kernel.release} failed`, {
          where: sourceDir,
          detail: (errors.length ? errors : output.slice(-30))
            .join("\n")
            .replaceAll(`${moduleDir}/`, "")
            .replaceAll(`${src}/`, ""),
          cause: err,
        });
      }
    },
  );
  if (!built) progress.info(`[kmod] ${file} for ${kernel.describe}: cached (${shortKey(key)})`);
  let warnings: string[] = [];
  try {
    warnings = (await readFile(join(dir, WARNINGS_FILE), "utf8")).split("\n").filter(Boolean);
  } catch {
    throw new HilError(`cache entry has no ${WARNINGS_FILE}`, { where: dir });
  }
  return { name: opts.name, path: join(dir, file), key, release: kernel.release, warnings };
}

/** Where a module of the layer lies in the guest. */
export function guestModulePath(release: string, name: string): string {
  return `/lib/modules/${release}/extra/${name}.ko`;
}

/** An initramfs layer with the modules at /lib/modules/<release>/extra/<name>.ko. */
export async function buildGuestModulesLayer(modules: readonly BuiltGuestModule[]): Promise<ImageLayer> {
  const releases = new Set(modules.map((m) => m.release));
  if (releases.size > 1)
    throw new HilError(`modules for different kernels in one layer: ${[...releases].join(", ")}`);
  const key = hashParts([RECIPE, "layer", ...modules.map((m) => m.key)]);
  const { dir } = await ensureEntry(LAYER_KIND, key, { what: "module layer" }, async (work) => {
    const release = modules[0]?.release;
    const entries: CpioEntry[] = [];
    if (release) {
      for (const d of ["lib", "lib/modules", `lib/modules/${release}`, `lib/modules/${release}/extra`])
        entries.push({ kind: "dir", path: d, mode: 0o755 });
      for (const m of modules)
        entries.push({
          kind: "file",
          path: guestModulePath(release, m.name).slice(1),
          mode: 0o644,
          data: await readFile(m.path),
        });
    }
    await writeCpioGz(join(work, LAYER_ARCHIVE), entries);
  });
  return { path: join(dir, LAYER_ARCHIVE), key };
}

/** What loading needs of a guest: a shell and a way to copy files in. */
export interface ModuleShell {
  exec(
    command: string,
    opts?: { timeoutMs?: number },
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  copyTo(localPath: string, remotePath: string, opts?: { mode?: number }): Promise<void>;
  /** a command whose stdin is written while it runs (a guest's; absent, scripts go one exec each) */
  execStream?(command: string, opts?: { timeoutMs?: number }): Promise<ExecStream>;
}

/**
 * Loads a module into a running guest: modprobes `deps` (in-tree modules it needs), copies the
 * .ko in unless `inImage` (it came with the initramfs layer), and insmods it with `params`.
 */
export async function loadGuestModule(
  guest: ModuleShell,
  mod: BuiltGuestModule,
  opts: { deps?: readonly string[]; params?: string; inImage?: boolean } = {},
): Promise<void> {
  const remote = opts.inImage ? guestModulePath(mod.release, mod.name) : `/tmp/${mod.name}.ko`;
  if (!opts.inImage) await guest.copyTo(mod.path, remote);
  const deps = (opts.deps ?? []).map((d) => `modprobe ${d} && `).join("");
  const r = await guest.exec(`${deps}insmod ${remote} ${opts.params ?? ""}`.trim(), { timeoutMs: 60_000 });
  if (r.exitCode !== 0) {
    const dmesg = await guest.exec("dmesg | tail -n 20");
    throw new HilError(`cannot load ${mod.name}.ko in the guest`, {
      detail: `${r.stdout}${r.stderr}\n${dmesg.stdout}`.trim(),
    });
  }
}
