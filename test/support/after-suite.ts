/**
 * Run by tap after every test file (package.json "tap.after"): the suite checks that it left
 * nothing of the project behind. A leftover is something made since the suite started that no
 * live process owns: an orphaned QEMU or device server, a hil-* temp dir, a cache lock or a
 * half-built cache entry; and a mount on a hil-* temp dir. Exits 1 listing them (tap then exits
 * 1, and so does `npm test`).
 *
 * A dir some live process uses (names on its command line or in its environment, holds open, works
 * in) is not reported, so a `hil run` or another test run beside the suite is left alone while it
 * uses its dirs; between two of its steps it may not be, so run the suite alone to trust the list.
 *
 * It also writes and prints the fault campaign's table (test/faults) when its cases ran.
 */
import { readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cacheRoot } from "../../util/cache.ts";
import { pidAlive } from "../../util/pid-alive.ts";
import { renderTable, rowsSince, TABLE_FILE } from "../faults/table.ts";

const CLOCK_TICKS_PER_SECOND = 100;

function bootTimeMs(): number {
  const line = readFileSync("/proc/stat", "utf8")
    .split("\n")
    .find((l) => l.startsWith("btime "));
  return Number(line?.split(" ")[1]) * 1000;
}

/** /proc/<pid>/stat after the command name: field 4 is the ppid, field 22 the start time in ticks. */
function procStat(pid: number): { ppid: number; startMs: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return { ppid: Number(fields[1]), startMs: bootTimeMs() + (ticks * 1000) / CLOCK_TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** When the tap run began: the start of the process that ran this script (tap's runner). */
function suiteStartMs(): number {
  return procStat(process.ppid)?.startMs ?? Date.now();
}

const PROJECT_PROCESS = [
  /qemu-system-x86_64/,
  /qemu\/device-server\/main\.ts/,
  /\/bin\/hil(\.mjs)?( |$)/,
  // the bundle hil starts from (bin/cli-bundle.mjs): its CLI and device server
  /\/cli-bundle\/[0-9a-f]{64}\/(hil|device-server)\.mjs/,
];

/** Project processes started during the suite whose parent died: nothing will ever stop them. */
function orphanedProcesses(since: number): string[] {
  const out: string[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const stat = procStat(pid);
    const cmd = cmdline(pid);
    if (!stat || stat.startMs < since || !PROJECT_PROCESS.some((re) => re.test(cmd))) continue;
    if (stat.ppid === 1 || !pidAlive(stat.ppid)) out.push(`process ${pid} (orphaned): ${cmd.slice(0, 160)}`);
  }
  return out;
}

function madeSince(path: string, since: number): boolean {
  try {
    return statSync(path).ctimeMs >= since;
  } catch {
    return false;
  }
}

function ownerAlive(dir: string): boolean {
  try {
    return pidAlive(Number.parseInt(readFileSync(join(dir, "owner.pid"), "utf8"), 10));
  } catch {
    return false;
  }
}

/** Paths live processes hold: their command lines, working directories, open files and environments. */
function pathsInUse(): string[] {
  const held: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const at = `/proc/${name}`;
    try {
      held.push(
        readFileSync(`${at}/cmdline`, "utf8"),
        readFileSync(`${at}/environ`, "utf8"),
        readlinkSync(`${at}/cwd`),
      );
      for (const fd of readdirSync(`${at}/fd`)) held.push(readlinkSync(`${at}/fd/${fd}`));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return held;
}

/** hil-* entries of the temp dir made during the suite that no live process owns or uses. */
function tempLeftovers(since: number): string[] {
  const root = tmpdir();
  const candidates = readdirSync(root)
    .filter((n) => n.startsWith("hil-"))
    .map((n) => join(root, n))
    .filter((p) => madeSince(p, since) && !ownerAlive(p));
  if (candidates.length === 0) return [];
  const held = pathsInUse();
  return candidates.filter((p) => !held.some((h) => h.includes(p))).map((p) => `temp: ${p}`);
}

/** Locks and half-built entries of the cache made during the suite whose pid is gone. */
function cacheLeftovers(since: number): string[] {
  const out: string[] = [];
  let kinds: string[];
  try {
    kinds = readdirSync(cacheRoot());
  } catch {
    return out;
  }
  for (const kind of kinds) {
    const parent = join(cacheRoot(), kind);
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue;
    }
    for (const name of names) {
      const path = join(parent, name);
      if (!madeSince(path, since)) continue;
      const tmp = /\.tmp-(\d+)$/.exec(name);
      if (tmp && !pidAlive(Number(tmp[1]))) out.push(`cache: half-built entry ${path}`);
      if (name.endsWith(".lock")) {
        const owner = Number.parseInt(readFileSync(path, "utf8") || "0", 10);
        if (!owner || !pidAlive(owner)) out.push(`cache: lock of a dead process ${path}`);
      }
    }
  }
  return out;
}

/**
 * Mounts left on hil-* dirs of the temp dir (a test's small tmpfs, an overlay cache) that no live
 * process uses: nothing will unmount them. Any age: a mount outlives the dir's change time.
 */
function mountLeftovers(): string[] {
  const prefix = `${join(tmpdir(), "hil-")}`;
  let points: string[];
  try {
    // /proc/self/mountinfo: field 5 is the mount point, spaces escaped as \040
    points = readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((l) => (l.split(" ")[4] ?? "").replace(/\\040/g, " "))
      .filter((p) => p.startsWith(prefix));
  } catch {
    return [];
  }
  if (points.length === 0) return [];
  const held = pathsInUse();
  return points.filter((p) => !held.some((h) => h.includes(p))).map((p) => `mount: ${p}`);
}

const since = suiteStartMs();

// the fault campaign's table (test/faults/table.ts), when any of its files ran in this suite
const faultRows = rowsSince(since);
if (faultRows.length > 0) {
  const text = renderTable(faultRows);
  writeFileSync(TABLE_FILE, text);
  process.stderr.write(`\nthe fault campaign (${TABLE_FILE}):\n\n${text}\n`);
}

const look = () => [
  ...orphanedProcesses(since),
  ...tempLeftovers(since),
  ...cacheLeftovers(since),
  ...mountLeftovers(),
];
// tap may start this script while the last test processes still run their exit handlers (which
// remove their temp dirs): what is gone a few seconds later was being cleaned up, not left
const SETTLE_MS = 5000;
let found = look();
if (found.length > 0) {
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const again = new Set(look());
  found = found.filter((f) => again.has(f));
}
if (found.length > 0) {
  process.stderr.write(
    `after the suite: ${found.length} leftover(s) of the project (made since ${new Date(since).toISOString()}, no live owner):\n${found.map((f) => `  ${f}`).join("\n")}\n`,
  );
  process.exit(1);
}
process.stdout.write(
  `after the suite: nothing of the project left behind (since ${new Date(since).toISOString()})\n`,
);
