// hil's CLI as one JavaScript file, built with esbuild (tsx's own compiler, already installed) and
// kept in the cache under a digest of everything it is built from. Loading ~270 TypeScript modules
// through tsx costs seconds at every start; loading one prepared file costs a fraction of that.
// Plain JavaScript: it runs before any TypeScript loader exists.
//
// The bundle lives outside the package, so what the modules find relative to themselves is fixed
// at build time, per module: `import.meta.url` becomes the module's own file URL (the guest
// sources, fixtures and workers it names stay where they are) and `import.meta.resolve("<pkg>")`
// the package's file URL as the module would resolve it; the npm packages that look for files
// beside their own stay external, imported by their resolved file URLs.
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from "node:fs";
import { readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** What the CLI is built from, relative to the package: its sources and what pins its dependencies. */
const SOURCE_DIRS = ["harness", "qemu", "util"];
const SOURCE_FILES = ["package-lock.json", "tsconfig.json", "bin/cli-bundle.mjs"];
const SOURCE_NAME = /\.(ts|mts|mjs|js|json)$/;
const BUILTIN = new Set(builtinModules);
/**
 * Packages loaded from where npm installed them, not bundled: those that find files beside their
 * own (koffi's native binary, ssh2's optional native crypto) and tsx (child processes load it by
 * its URL).
 */
const EXTERNAL_PACKAGES = new Set(["koffi", "ssh2", "tsx", "esbuild"]);
/** The bundled CommonJS packages' require() of Node's own modules, from the ESM bundle. */
const REQUIRE_SHIM =
  'import { createRequire as __hilRequire } from "node:module"; const require = __hilRequire(import.meta.url);';

function packageName(specifier) {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * Where bundles are kept: HIL_BUNDLE_CACHE, else cli-bundle in the user's erdma-hil cache. Not under
 * HIL_CACHE_DIR: a bundle is hil's own program, not a run's builds, so a private cache (a test's, a
 * CI shard's) neither rebuilds it nor carries it.
 */
export function bundleCacheDir(env = process.env) {
  if (env.HIL_BUNDLE_CACHE) return resolve(env.HIL_BUNDLE_CACHE);
  const xdg =
    env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.length > 0 ? env.XDG_CACHE_HOME : join(homedir(), ".cache");
  return join(xdg, "erdma-hil", "cli-bundle");
}

function addTree(hash, root, dir) {
  const entries = readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) addTree(hash, root, rel);
    else if (e.isFile() && SOURCE_NAME.test(e.name))
      hash.update(`${rel}\0`).update(readFileSync(join(root, rel)));
  }
}

/**
 * The digest of the CLI's sources as they are now, with the node and esbuild that build them, and
 * of where they are: the bundle names the checkout's files and node_modules by their paths, so
 * another checkout of the same sources (a CI clone, a copy that is gone by now) needs its own.
 */
export function bundleKey(root, esbuildVersion) {
  const hash = createHash("sha256").update(
    `node ${process.version}\0esbuild ${esbuildVersion}\0root ${resolve(root)}\0`,
  );
  for (const dir of SOURCE_DIRS) addTree(hash, root, dir);
  for (const file of SOURCE_FILES) hash.update(`${file}\0`).update(readFileSync(join(root, file)));
  return hash.digest("hex");
}

/** The esbuild plugin that keeps each module's view of where it is and of what it resolves. */
function inPlace() {
  return {
    name: "hil-in-place",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "hil-in-place" || BUILTIN.has(args.path) || args.path.startsWith("node:"))
          return undefined;
        if (!EXTERNAL_PACKAGES.has(packageName(args.path))) return undefined;
        const found = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          pluginData: "hil-in-place",
        });
        if (found.errors.length > 0) return { errors: found.errors };
        return { path: pathToFileURL(found.path).href, external: true };
      });
      build.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
        let text = await readFile(args.path, "utf8");
        const resolveDir = resolve(args.path, "..");
        for (const m of [...text.matchAll(/import\.meta\.resolve\(\s*(["'])([^"']+)\1\s*\)/g)]) {
          const found = await build.resolve(m[2], {
            kind: "import-statement",
            resolveDir,
            pluginData: "hil-in-place",
          });
          if (found.errors.length > 0) return { errors: found.errors };
          text = text.replace(m[0], JSON.stringify(pathToFileURL(found.path).href));
        }
        text = text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href));
        return { contents: text, loader: "ts", resolveDir };
      });
    },
  };
}

/** Bundles kept besides the one in use: those of other checkouts and recent edits. */
const KEEP_BUNDLES = 8;
/** The variable that tells the processes hil starts where its bundle is (util/package.ts reads it). */
export const BUNDLE_DIR_ENV = "HIL_BUNDLE_DIR";

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

/**
 * Removes all but the newest KEEP_BUNDLES bundles of `dir` (a process that loaded one has it
 * already), and the build directories of hil processes that died building.
 */
function prune(dir) {
  for (const name of readdirSync(dir)) {
    const building = /\.tmp-(\d+)$/.exec(name);
    if (building && !alive(Number(building[1]))) rmSync(join(dir, name), { recursive: true, force: true });
  }
  const bundles = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && /^[0-9a-f]{64}$/.test(e.name))
    .map((e) => ({ name: e.name, at: statSync(join(dir, e.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const { name } of bundles.slice(KEEP_BUNDLES))
    rmSync(join(dir, name), { recursive: true, force: true });
}

/**
 * A bundle in use is the newest to prune: a long run starts its device servers from it, and other
 * checkouts' builds meanwhile must not remove it (once a minute at most).
 */
function markUsed(bundle) {
  const now = Date.now();
  try {
    if (now - statSync(bundle).mtimeMs > 60_000) utimesSync(bundle, now / 1000, now / 1000);
  } catch {
    // a bundle that cannot be marked is still a bundle
  }
}

/** esbuild's options for one entry of the bundle, written to `outfile`. */
function entryOptions(outfile) {
  return {
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // linked: read only when source maps are on (HIL_SOURCE_MAPS=1), which costs ~0.2 s a start
    sourcemap: "linked",
    sourcesContent: false,
    banner: { js: REQUIRE_SHIM },
    logLevel: "silent",
    plugins: [inPlace()],
  };
}

/**
 * Builds the bundle into `dir`/`key`: hil.mjs (the CLI) and device-server.mjs (the device model's
 * server, which every run starts), each with its source map. Built in a private directory and
 * renamed into place whole: a reader never finds half of one.
 */
async function build(esbuild, root, dir, key) {
  // named as the cache names a half-built entry (util/cache.ts)
  const work = join(dir, `${key}.tmp-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    const tsconfig = join(root, "tsconfig.json");
    await esbuild.build({
      ...entryOptions(join(work, "hil.mjs")),
      entryPoints: [join(root, "harness/cli/main.ts")],
      tsconfig,
    });
    await esbuild.build({
      ...entryOptions(join(work, "device-server.mjs")),
      stdin: {
        contents: 'import { main } from "./main.ts";\nawait main();\n',
        resolveDir: join(root, "qemu/device-server"),
        sourcefile: "device-server-entry.ts",
        loader: "ts",
      },
      tsconfig,
    });
    try {
      renameSync(work, join(dir, key));
    } catch (err) {
      // another hil built the same bundle meanwhile: that one is as good
      if (!existsSync(join(dir, key, "hil.mjs"))) throw err;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  prune(dir);
}

/**
 * The directory of the bundle for the sources under `root`, built first when the cache has none
 * for them. Undefined when it cannot be had (no esbuild, a cache that cannot be written): the
 * caller then loads the sources through tsx as before.
 */
export async function cliBundle(root) {
  try {
    const esbuild = await import("esbuild");
    const dir = bundleCacheDir();
    const key = bundleKey(root, esbuild.version);
    if (!existsSync(join(dir, key, "hil.mjs"))) await build(esbuild, root, dir, key);
    else markUsed(join(dir, key));
    return join(dir, key);
  } catch (err) {
    if (process.env.HIL_BUNDLE_DEBUG) process.stderr.write(`hil: no CLI bundle: ${err?.stack ?? err}\n`);
    return undefined;
  }
}
