/**
 * What hil puts on a target and takes away again. The runner's files go over as one shell archive
 * on a shell's stdin (heredocs under a fresh directory), hil_kverbs.ko is copied beside them, and
 * the cleanup (also on stdin, so that no command line but the runner's names the directory) kills
 * whatever still runs from the directory, resets and unloads hil_kverbs, removes the soft-iWARP
 * link hil added, puts the console level back, removes the directory, and says what it could not.
 */

import { shellQuote } from "../../qemu/launch/ssh.ts";
import { KVERBS_DEBUGFS } from "../executor/kverbs-driver.ts";
import { KVERBS_MODULE } from "../image/kverbs-module.ts";

export const TARGET_DIR_TEMPLATE = "/tmp/hil-target.XXXXXX";
const RESET_TIMEOUT_MS = 30_000;

/** A script that writes each file under `dir` (paths relative to it, sub-directories made; text files ending in a newline). */
export function shellArchive(dir: string, files: ReadonlyMap<string, string>): string {
  const out = ["set -e", `cd ${shellQuote(dir)}`];
  let n = 0;
  for (const [path, text] of files) {
    if (path.startsWith("/") || path.split("/").includes(".."))
      throw new Error(`a runner file must stay under its directory: ${path}`);
    let mark = `HIL_EOF_${n++}`;
    while (text.includes(mark)) mark += "_";
    const slash = path.lastIndexOf("/");
    if (slash > 0) out.push(`mkdir -p ${shellQuote(path.slice(0, slash))}`);
    if (text !== "" && !text.endsWith("\n"))
      throw new Error(`a runner file must end with a newline: ${path}`);
    out.push(`cat > ${shellQuote(path)} <<'${mark}'\n${text}${mark}`);
  }
  return `${out.join("\n")}\n`;
}

/** The runner's command line: its absolute path names the directory, which the cleanup looks for. */
export function runnerCommand(dir: string, env: Readonly<Record<string, string>>): string {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`);
  return [...vars, "sh", shellQuote(`${dir}/run.sh`)].join(" ");
}

export interface CleanupPlan {
  dir: string;
  /** the soft-iWARP link hil added (absent: none, or it was there before) */
  siwLink?: string;
  /** the console log level to put back */
  consoleLevel?: string;
}

export const LEFT_TAG = "hil-left";

/** The cleanup script; it prints `hil-left <what>` for each thing it could not take away. */
export function cleanupScript(p: CleanupPlan): string {
  const d = shellQuote(p.dir);
  return [
    `d=${d}`,
    `for p in /proc/[0-9]*; do grep -qF "$d/" "$p/cmdline" 2>/dev/null && kill -9 "\${p#/proc/}" 2>/dev/null; done`,
    "sleep 0.2",
    `if [ -d ${KVERBS_DEBUGFS} ]; then`,
    `  ( cd ${KVERBS_DEBUGFS} && echo reset > ctl && echo ${RESET_TIMEOUT_MS} > wait_ms && read -r s < wait ) 2>/dev/null`,
    `  rmmod ${KVERBS_MODULE} 2>/dev/null || { sleep 1; rmmod ${KVERBS_MODULE} 2>/dev/null; }`,
    "fi",
    ...(p.siwLink ? [`rdma link del ${shellQuote(p.siwLink)} 2>/dev/null`] : []),
    ...(p.consoleLevel && /^\d+$/.test(p.consoleLevel) ? [`dmesg -n ${p.consoleLevel} 2>/dev/null`] : []),
    'rm -rf "$d"',
    `[ -d /sys/module/${KVERBS_MODULE} ] && echo "${LEFT_TAG} the ${KVERBS_MODULE} module (loaded)"`,
    `[ -e "$d" ] && echo "${LEFT_TAG} $d"`,
    `for p in /proc/[0-9]*; do grep -qF "$d/" "$p/cmdline" 2>/dev/null && echo "${LEFT_TAG} process \${p#/proc/}"; done`,
    "true",
  ].join("\n");
}

/** The things the cleanup said it left. */
export function leftBehind(output: string): string[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith(`${LEFT_TAG} `))
    .map((l) => l.slice(LEFT_TAG.length + 1).trim());
}
