/** The fd oracle: which fds are open after an input that were not before it, once Node's own have settled. */
import { readdirSync, readFileSync, readlinkSync, writeSync } from "node:fs";

/** Added to every eventfd a harness makes, so the oracle tells them from Node's own eventfds. */
const EVENTFD_MARK = 0x7a5e_0000_0000n;

/** Marks an eventfd as the harness's (its counter starts at EVENTFD_MARK). */
export function markEventFd(fd: number): void {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(EVENTFD_MARK);
  writeSync(fd, b);
}

function isHarnessEventFd(fd: number): boolean {
  try {
    const m = /eventfd-count:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
    return m !== null && BigInt(`0x${m[1]}`) >= EVENTFD_MARK;
  } catch {
    return false;
  }
}

/** The open fds (the listing's own directory fd, closed once it is read, is left out). */
export function openFds(): Set<number> {
  return new Set(
    readdirSync("/proc/self/fd")
      .map(Number)
      .filter((fd) => kind(fd) !== "closed"),
  );
}

function kind(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "closed";
  }
}

/**
 * The fds of the kinds an input brings (the harness's memfds and marked eventfds, sockets)
 * opened since `before` and still open, each as "fd: what it is". Others are left out: Node and
 * the test runner open files, pipes, epoll fds and eventfds of their own at any time.
 */
export async function fdsLeaked(before: Set<number>): Promise<string[]> {
  const suspect = (fd: number) => {
    if (before.has(fd)) return false;
    const k = kind(fd);
    return (
      k.startsWith("/memfd:fuzz") ||
      k.startsWith("socket:") ||
      (k === "anon_inode:[eventfd]" && isHarnessEventFd(fd))
    );
  };
  let extra: number[] = [];
  for (let i = 0; i < 3; i++) {
    extra = [...openFds()].filter(suspect);
    if (extra.length === 0) return [];
    await new Promise((r) => setTimeout(r, 20));
  }
  return extra.map((fd) => `${fd}: ${kind(fd)}`);
}
