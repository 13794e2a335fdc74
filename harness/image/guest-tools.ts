/**
 * Builds the guest's own tools (guest/tools/*.c) on the host against bookworm's development
 * packages, dynamically linked (the guest runs the same bookworm libraries), and packs them as an
 * initramfs layer with the binaries in /usr/bin. Cached by the sources, the compiler and the
 * -dev packages' versions.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureHostPackages } from "../../util/apt.ts";
import { ensureEntry } from "../../util/cache.ts";
import { probe, run } from "../../util/exec.ts";
import { hashParts } from "../../util/hash.ts";
import { progress } from "../../util/progress.ts";
import { writeCpioGz } from "./cpio.ts";
import type { ImageLayer } from "./userspace.ts";

const TOOLS_DIR = fileURLToPath(new URL("../../guest/tools/", import.meta.url));
const RECIPE = "guest-tools-1";
export const TOOLS_ARCHIVE = "tools.cpio.gz";

/** One tool: its C source here and the libraries it links. */
interface Tool {
  binary: string;
  /** the main C source, relative to guest/tools */
  source: string;
  libs: string[];
  /** more C sources of the same program, relative to guest/tools */
  moreSources?: readonly string[];
  /** headers the sources include (relative to guest/tools): part of the cache key */
  headers?: readonly string[];
  /** compiler flags beyond the common ones */
  cflags?: readonly string[];
  /** include directories (relative to guest/tools): -I, and every file in them part of the cache key */
  includeDirs?: readonly string[];
}

/** The userspace verbs executor (guest/uverbs): the kernel executor's command language on libibverbs/librdmacm. */
const UVERBS_TOOL: Tool = {
  binary: "hil-uverbs",
  source: "../uverbs/main.c",
  moreSources: [
    ...["cmd.c", "trace.c", "objects.c", "cm.c", "wr.c", "cq.c", "drain.c"].map((f) => `../uverbs/${f}`),
    ...[
      "cmdlang.c",
      "names.c",
      "record.c",
      "core_obj.c",
      "core_cm.c",
      "core_cq.c",
      "core_post.c",
      "core_run.c",
      "core_teardown.c",
    ].map((f) => `../common/${f}`),
  ],
  headers: ["../uverbs/uv.h", "../uverbs/uv_port.h"],
  includeDirs: ["../common"],
  libs: ["ibverbs", "rdmacm"],
  cflags: ["-Wextra"],
};

export const GUEST_TOOLS: readonly Tool[] = [
  { binary: "hil-verbs-lifecycle", source: "verbs-lifecycle.c", libs: ["ibverbs"] },
  UVERBS_TOOL,
];

/** What building them needs on the host (Debian package names). */
export const TOOLS_HOST_PACKAGES = ["gcc", "libc6-dev", "libibverbs-dev", "librdmacm-dev"] as const;

/** Where the guest finds a tool. */
export function guestToolPath(binary: string): string {
  return `/usr/bin/${binary}`;
}

/** Every file of a tool that goes into its cache key: sources, headers, the include directories' files. */
async function toolFiles(t: Tool): Promise<string[]> {
  const included: string[] = [];
  for (const d of t.includeDirs ?? [])
    included.push(...(await readdir(join(TOOLS_DIR, d))).sort().map((f) => join(d, f)));
  return [...new Set([t.source, ...(t.moreSources ?? []), ...(t.headers ?? []), ...included])];
}

async function compileTool(t: Tool, output: string): Promise<void> {
  await run(`gcc ${t.source}`, "gcc", [
    "-O2",
    "-g",
    "-Wall",
    ...(t.cflags ?? []),
    ...(t.includeDirs ?? []).map((d) => `-I${join(TOOLS_DIR, d)}`),
    "-Werror",
    "-std=gnu11",
    "-o",
    output,
    ...[t.source, ...(t.moreSources ?? [])].map((f) => join(TOOLS_DIR, f)),
    ...t.libs.map((l) => `-l${l}`),
  ]);
}

/**
 * Builds one guest tool into `outDir` (no cache, no layer), e.g. to run it on the host; returns
 * the binary's path. Installs the -dev packages it needs first.
 */
export async function buildGuestTool(binary: string, outDir: string): Promise<string> {
  const t = GUEST_TOOLS.find((x) => x.binary === binary);
  if (!t) throw new Error(`no guest tool ${binary}`);
  await ensureHostPackages(TOOLS_HOST_PACKAGES);
  const output = join(outDir, binary);
  await compileTool(t, output);
  return output;
}

async function toolchainFingerprint(): Promise<string[]> {
  const gcc = await probe("gcc", ["-dumpfullversion"]);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's format, not a template
  const dev = await probe("dpkg-query", ["-W", "-f=${Package} ${Version}\\n", ...TOOLS_HOST_PACKAGES]);
  return [gcc.stdout.trim(), dev.stdout.trim()];
}

export const GUEST_TOOLS_KIND = "image/guest-tools";

/** The tools layer's cache key: the sources, the host's compiler and -dev packages (as installed now). */
export async function guestToolsKey(): Promise<string> {
  const parts: (string | Uint8Array)[] = [RECIPE, ...(await toolchainFingerprint())];
  for (const t of GUEST_TOOLS) {
    parts.push(t.binary, t.libs.join(","), (t.cflags ?? []).join(" "));
    for (const f of await toolFiles(t)) parts.push(f, await readFile(join(TOOLS_DIR, f)));
  }
  return hashParts(parts);
}

/** The tools layer (built or from the cache). Installs the -dev packages it needs first. */
export async function buildGuestToolsLayer(): Promise<ImageLayer> {
  await ensureHostPackages(TOOLS_HOST_PACKAGES);
  const key = await guestToolsKey();
  const { dir } = await ensureEntry(GUEST_TOOLS_KIND, key, { what: "guest tools" }, async (work) => {
    const step = progress.step("[image] building guest tools");
    try {
      for (const t of GUEST_TOOLS) await compileTool(t, join(work, t.binary));
      const entries = [
        { kind: "dir" as const, path: "usr", mode: 0o755 },
        { kind: "dir" as const, path: "usr/bin", mode: 0o755 },
      ];
      const files = await Promise.all(
        GUEST_TOOLS.map(async (t) => ({
          kind: "file" as const,
          path: guestToolPath(t.binary).slice(1),
          mode: 0o755,
          data: await readFile(join(work, t.binary)),
        })),
      );
      await writeCpioGz(join(work, TOOLS_ARCHIVE), [...entries, ...files]);
      step.succeed(GUEST_TOOLS.map((t) => t.binary).join(", "));
    } catch (err) {
      step.fail();
      throw err;
    }
  });
  return { path: join(dir, TOOLS_ARCHIVE), key };
}
