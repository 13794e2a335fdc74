/**
 * The verilated queue engine: erdma_queue_engine.sv and its modules compiled by Verilator into C++,
 * with engine_abi.cpp linked into a shared library that rtl/engine.ts loads with koffi. Cached under
 * the project's cache keyed by the sources' bytes, the planted bugs switched on, and the Verilator
 * and compiler versions; a build shows one progress step.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureEntry } from "../../../util/cache.ts";
import { HilError } from "../../../util/errors.ts";
import { probe, run } from "../../../util/exec.ts";
import { hashParts } from "../../../util/hash.ts";
import { progress } from "../../../util/progress.ts";

/** Debian packages the RTL backend needs: the simulator, the synthesis tool, a C++ compiler. */
export const RTL_HOST_PACKAGES = ["verilator", "yosys", "g++", "make"] as const;

export const RTL_DIR = fileURLToPath(new URL("./", import.meta.url));
export const RTL_TOP = "erdma_queue_engine";
/** The synthesizable sources, top first. */
export const RTL_SOURCES = [
  "erdma_queue_engine.sv",
  "erdma_cqe_gen.sv",
  "erdma_flush_limit.sv",
  "erdma_flush_step.sv",
] as const;
const ABI_SOURCE = "engine_abi.cpp";
/** Bump when the way the library is built changes in a way the sources do not show. */
const RTL_RECIPE = "rtl-engine-1";
export const RTL_LIBRARY = "libqueue-engine.so";

/** Bugs planted in the RTL (its parameters), for showing that the oracle catches them. */
export const RTL_BUGS = {
  /** the owner bit stays 1 on the ring's second pass (erdma_cqe_gen.sv) */
  "owner-stuck": "BUG_OWNER_STUCK",
  /** the WQE that reaches the ring's end gets no flush completion (erdma_flush_step.sv) */
  "flush-skip-wrap": "BUG_FLUSH_SKIP_WRAP",
  /** a flush CQE overtakes an earlier WQE's success completion still on its way (erdma_flush_step.sv) */
  "flush-before-success": "BUG_FLUSH_BEFORE_SUCCESS",
} as const;
export type RtlBug = keyof typeof RTL_BUGS;

export function isRtlBug(name: string): name is RtlBug {
  return Object.hasOwn(RTL_BUGS, name);
}

/** Verilator's version line; a missing verilator is one error naming `hil setup`. */
export async function verilatorVersion(): Promise<string> {
  const found = await probe("verilator", ["--version"]).catch(() => undefined);
  if (found?.exitCode !== 0) {
    throw new HilError(
      "verilator is not installed: run `hil setup` (it installs Debian's verilator and yosys)",
      {
        where: "--device-rtl",
      },
    );
  }
  return found.stdout.trim();
}

/** The parameters that switch the planted bugs on, as Verilator's -G options. */
export function bugParameters(bugs: readonly RtlBug[]): string[] {
  return [...new Set(bugs)].sort().map((b) => `-G${RTL_BUGS[b]}=1'b1`);
}

/** The shared library of the verilated engine (built now if the cache has none for these sources). */
export async function ensureRtlEngine(bugs: readonly RtlBug[] = []): Promise<string> {
  const verilator = await verilatorVersion();
  const compiler = (await probe("g++", ["--version"]).catch(() => undefined))?.stdout.split("\n")[0] ?? "";
  const params = bugParameters(bugs);
  const key = hashParts([
    RTL_RECIPE,
    verilator,
    compiler,
    ...params,
    ...[...RTL_SOURCES, ABI_SOURCE].flatMap((f) => [f, readFileSync(join(RTL_DIR, f))]),
  ]);
  const what = `verilated queue engine${bugs.length ? ` (bugs: ${[...bugs].sort().join(", ")})` : ""}`;
  const { dir } = await ensureEntry("rtl-engine", key, { what }, async (work) => {
    const step = progress.step(`[rtl] verilating ${RTL_TOP} (${verilator.split(" ").slice(0, 2).join(" ")})`);
    try {
      const obj = join(work, "obj");
      await run("verilator", "verilator", [
        "--cc",
        "--build",
        "-j",
        "2",
        "-O2",
        "-CFLAGS",
        "-fPIC -O2",
        "--Mdir",
        obj,
        "--top-module",
        RTL_TOP,
        ...params,
        ...RTL_SOURCES.map((f) => join(RTL_DIR, f)),
      ]);
      const include = (await probe("verilator", ["--getenv", "VERILATOR_ROOT"])).stdout.trim();
      const inc = join(include, "include");
      await run("linking the queue engine", "g++", [
        "-shared",
        "-fPIC",
        "-O2",
        "-std=c++17",
        `-I${obj}`,
        `-I${inc}`,
        `-I${join(inc, "vltstd")}`,
        "-o",
        join(work, RTL_LIBRARY),
        join(RTL_DIR, ABI_SOURCE),
        join(obj, `V${RTL_TOP}__ALL.a`),
        join(inc, "verilated.cpp"),
        join(inc, "verilated_threads.cpp"),
        "-pthread",
      ]);
      step.succeed(RTL_LIBRARY);
    } catch (err) {
      step.fail();
      throw err;
    }
  });
  return join(dir, RTL_LIBRARY);
}
