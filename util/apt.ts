import { existsSync, readFileSync, statSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { askApt, forgetAnswers } from "./apt-answers.ts";
import { cacheFullError, cacheRoot, DISK_FULL_WORDS, makeCacheDir, withLock } from "./cache.ts";
import { HilError } from "./errors.ts";
import { probe, run } from "./exec.ts";
import { makeDir } from "./make-dir.ts";
import { progress } from "./progress.ts";

/**
 * apt with a private sources list and state dir, so suites the system does not list (backports,
 * sid) are reachable without editing the system's apt configuration.
 */
export interface AptContext {
  name: string;
  options: string[];
}

const MIRROR = process.env.HIL_DEBIAN_MIRROR ?? "http://deb.debian.org/debian";
const SECURITY_MIRROR = process.env.HIL_DEBIAN_SECURITY_MIRROR ?? "http://deb.debian.org/debian-security";
const KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg";
const LISTS_MAX_AGE_MS = 24 * 3600 * 1000;

export const APT_CONTEXTS = {
  /** Debian 12, the host's release: guest userspace and linux-source-6.1. */
  bookworm: [
    { uri: MIRROR, suites: ["bookworm", "bookworm-updates"] },
    { uri: SECURITY_MIRROR, suites: ["bookworm-security"] },
  ],
  /** bookworm plus backports: meson >= 1.5, linux-source-6.12. */
  "bookworm-backports": [{ uri: MIRROR, suites: ["bookworm", "bookworm-updates", "bookworm-backports"] }],
  /** unstable: linux-source-7.x. Only ever used to download, never to install on the host. */
  sid: [{ uri: MIRROR, suites: ["sid"] }],
} as const;

export type AptContextName = keyof typeof APT_CONTEXTS;

function sourcesText(name: AptContextName): string {
  return APT_CONTEXTS[name]
    .map(
      (s) =>
        `Types: deb\nURIs: ${s.uri}\nSuites: ${s.suites.join(" ")}\nComponents: main\nSigned-By: ${KEYRING}\n`,
    )
    .join("\n");
}

/** Where a context keeps its sources, lists and downloads, and the apt options that point there. */
function contextPaths(name: AptContextName) {
  const base = join(cacheRoot(), "apt", name);
  const sourcesDir = join(base, "sources.list.d");
  const lists = join(base, "lists");
  const archives = join(base, "archives");
  const options = [
    "-o",
    "Dir::Etc::SourceList=/dev/null",
    "-o",
    `Dir::Etc::SourceParts=${sourcesDir}`,
    "-o",
    `Dir::State::Lists=${lists}`,
    "-o",
    `Dir::Cache::Archives=${archives}`,
    "-o",
    "APT::Sandbox::User=root",
    // apt's parsed form of the lists, kept beside them: without it every apt run parses them all
    // again (about 1 s of CPU each; Debian's images set no cache file). It holds the lists only,
    // not the host's dpkg status, and apt checks it against the lists before using it.
    "-o",
    `Dir::Cache::srcpkgcache=${join(base, "srcpkgcache.bin")}`,
  ];
  return { base, sourcesDir, lists, archives, options, stamp: join(base, "updated") };
}

export async function aptContext(name: AptContextName): Promise<AptContext> {
  const { base, sourcesDir, lists, archives, options, stamp } = contextPaths(name);
  const ctx = { name, options };
  await makeCacheDir(join(lists, "partial"));
  await makeCacheDir(join(archives, "partial"));
  await makeCacheDir(sourcesDir);
  const sourcesFile = join(sourcesDir, "hil.sources");
  await withLock(join(base, "lock"), `apt lists ${name}`, async () => {
    const fresh = existsSync(stamp) && Date.now() - statSync(stamp).mtimeMs < LISTS_MAX_AGE_MS;
    if (fresh) return;
    await writeFile(sourcesFile, sourcesText(name));
    const step = progress.step(`[apt] updating package lists (${name})`);
    try {
      await run(`apt-get update (${name})`, "apt-get", [...options, "-q", "--error-on=any", "update"]);
      forgetAnswers(base);
      await writeFile(stamp, new Date().toISOString());
      step.succeed();
    } catch (err) {
      // Lists from an earlier update still name real packages: a mirror hiccup should not stop
      // a machine whose caches are warm.
      if (!existsSync(stamp)) {
        step.fail();
        throw orDiskFull(err);
      }
      step.fail(`failed; using the lists of ${readFileSync(stamp, "utf8").trim()}`);
    }
  });
  return ctx;
}

/**
 * A context with its package lists as an earlier update left them, never updating them (for
 * questions that must stay fast and offline, like `hil --version`); undefined when they were
 * never fetched.
 */
export function cachedAptContext(name: AptContextName): AptContext | undefined {
  const { options, stamp } = contextPaths(name);
  return existsSync(stamp) ? { name, options } : undefined;
}

/**
 * apt's own files (its lists, srcpkgcache.bin, downloaded packages) live in the cache: apt saying
 * its writes found no space there is the cache's full disk, not a missing package.
 */
function aptDiskFull(said: string): HilError | undefined {
  const line = said.split("\n").find((l) => DISK_FULL_WORDS.test(l));
  if (!line) return undefined;
  return cacheFullError("apt could not write its package cache (apt/ in the cache)", {
    quota: /Disk quota exceeded/.test(line),
    said: `apt said: ${line.trim()}`,
  });
}

/** `err` as aptDiskFull's error when apt's message says the disk is full, else as it is. */
function orDiskFull(err: unknown): unknown {
  const e = err as { message?: string; detail?: string };
  return aptDiskFull(`${e.message ?? String(err)}\n${e.detail ?? ""}`) ?? err;
}

/**
 * apt asked about the context's package lists (`args` after the context's options), answered again
 * from the answers kept beside them while they stay as they are (apt-answers.ts).
 */
export function askAboutLists(ctx: AptContext, file: "apt-get" | "apt-cache", args: readonly string[]) {
  const full = [...ctx.options, ...args];
  if (!(ctx.name in APT_CONTEXTS)) return probe(file, full);
  const { base, lists } = contextPaths(ctx.name as AptContextName);
  return askApt(base, lists, file, full);
}

export interface PackageUri {
  url: string;
  filename: string;
  size: number;
  sha256: string;
}

const URI_LINE = /^'([^']+)' (\S+) (\d+) SHA256:([0-9a-f]{64})/;

/**
 * Where apt would fetch each package from, with its size and sha256 from the signed index, in one
 * apt-get run (each run loads the whole package cache). A .deb's name starts with "<package>_".
 */
export async function packageUris(
  ctx: AptContext,
  pkgs: readonly string[],
): Promise<Map<string, PackageUri>> {
  const r = await askAboutLists(ctx, "apt-get", ["--print-uris", "download", ...pkgs]);
  if (r.exitCode !== 0) {
    const full = aptDiskFull(`${r.stderr}\n${r.stdout}`);
    if (full) throw full;
    throw new HilError(`Debian package(s) ${pkgs.join(", ")} not available from ${ctx.name}`, {
      detail: (r.stderr || r.stdout).trim(),
    });
  }
  const uris: PackageUri[] = [];
  for (const line of r.stdout.split("\n")) {
    const m = URI_LINE.exec(line);
    if (m) uris.push({ url: m[1] ?? "", filename: m[2] ?? "", size: Number(m[3]), sha256: m[4] ?? "" });
  }
  const byName = new Map<string, PackageUri>();
  for (const pkg of pkgs) {
    const uri = uris.find((u) => u.filename.startsWith(`${pkg}_`));
    if (!uri) throw new HilError(`Debian package ${pkg} is not available from ${ctx.name}`);
    byName.set(pkg, uri);
  }
  return byName;
}

export async function packageUri(ctx: AptContext, pkg: string): Promise<PackageUri> {
  const uri = (await packageUris(ctx, [pkg])).get(pkg);
  if (!uri) throw new HilError(`Debian package ${pkg} is not available from ${ctx.name}`);
  return uri;
}

/** The version in a .deb's file name (`<package>_<version>_<arch>.deb`, the epoch's colon as %3a). */
export function debFileVersion(filename: string): string | undefined {
  const m = /^[^_]+_([^_]+)_[^_]+\.deb$/.exec(filename);
  return m?.[1] === undefined ? undefined : decodeURIComponent(m[1]);
}

/** Downloads packages (verified by apt against the index) into `destDir`; returns their paths. */
export async function downloadPackages(
  ctx: AptContext,
  pkgs: readonly string[],
  destDir: string,
): Promise<string[]> {
  const uris = [...(await packageUris(ctx, pkgs)).values()];
  await makeDir(destDir);
  const missing = uris.filter((u) => !existsSync(join(destDir, u.filename)));
  if (missing.length > 0) {
    const total = missing.reduce((s, u) => s + u.size, 0);
    const step = progress.step(
      `[apt] downloading ${missing.length} package(s), ${(total / 1e6).toFixed(1)} MB`,
    );
    try {
      await run("apt-get download", "apt-get", [...ctx.options, "-q", "download", ...pkgs], { cwd: destDir });
      step.succeed();
    } catch (err) {
      step.fail();
      throw orDiskFull(err);
    }
  }
  return uris.map((u) => join(destDir, u.filename));
}

/** Packages (of `pkgs`) that dpkg does not list as installed on the host. */
export async function missingHostPackages(pkgs: readonly string[]): Promise<string[]> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not a template
  const r = await probe("dpkg-query", ["-W", "-f=${Package} ${db:Status-Status}\\n", ...pkgs]);
  const installed = new Set(
    r.stdout
      .split("\n")
      .filter((l) => l.endsWith(" installed"))
      .map((l) => l.split(" ")[0]),
  );
  return pkgs.filter((p) => !installed.has(p.split(":")[0] ?? p));
}

/** Another process installing (apt, or a second hil) holds dpkg's lock: wait for it, not fail. */
const WAIT_FOR_DPKG = ["-o", "DPkg::Lock::Timeout=300"];

/** The install running in this process: dpkg takes one at a time, so the next waits for it. */
let installing: Promise<unknown> = Promise.resolve();

/**
 * Installs what is missing of `pkgs` on the host. `from` names a private context whose default
 * release is its last suite (e.g. bookworm-backports) for packages the system's lists lack. Calls
 * made side by side (QEMU's build and the kernel's) install one after the other.
 */
export function ensureHostPackages(pkgs: readonly string[], from?: "bookworm-backports"): Promise<string[]> {
  const mine = installing.then(() => installMissing(pkgs, from));
  installing = mine.catch(() => {});
  return mine;
}

async function installMissing(pkgs: readonly string[], from?: "bookworm-backports"): Promise<string[]> {
  const missing = await missingHostPackages(pkgs);
  if (missing.length === 0) return [];
  const step = progress.step(`[setup] installing ${missing.join(" ")}${from ? ` from ${from}` : ""}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    if (from) {
      const ctx = await aptContext(from);
      await run(
        "apt-get install",
        "apt-get",
        [...ctx.options, ...WAIT_FOR_DPKG, "-q", "-y", "-t", from, "install", ...missing],
        { env },
      );
    } else {
      const first = await probe("apt-get", [...WAIT_FOR_DPKG, "-q", "-y", "install", ...missing], { env });
      if (first.exitCode !== 0) {
        await run("apt-get update", "apt-get", ["-q", "update"], { env });
        await run("apt-get install", "apt-get", [...WAIT_FOR_DPKG, "-q", "-y", "install", ...missing], {
          env,
        });
      }
    }
    step.succeed(`installed ${missing.length} package(s)`);
  } catch (err) {
    step.fail();
    throw err;
  }
  return missing;
}
