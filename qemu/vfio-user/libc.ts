/**
 * The few libc calls Node does not offer, through koffi (prebuilt FFI, no compile step):
 * UNIX sockets with SCM_RIGHTS, mmap of client memory, memfd and eventfd (for the fake client).
 * Linux x86_64 / aarch64 layouts (LP64). Pointers are BigInt addresses (koffi 3).
 */
import { readdirSync, readlinkSync } from "node:fs";
import koffi from "koffi";

const libc = koffi.load("libc.so.6");

const fns = {
  socket: libc.func("int socket(int domain, int type, int protocol)"),
  bind: libc.func("int bind(int fd, void *addr, uint32_t len)"),
  listen: libc.func("int listen(int fd, int backlog)"),
  connect: libc.func("int connect(int fd, void *addr, uint32_t len)"),
  socketpair: libc.func("int socketpair(int domain, int type, int protocol, _Out_ int *sv)"),
  shutdown: libc.func("int shutdown(int fd, int how)"),
  close: libc.func("int close(int fd)"),
  send: libc.func("intptr_t send(int fd, void *buf, size_t len, int flags)"),
  sendmsg: libc.func("intptr_t sendmsg(int fd, void *msg, int flags)"),
  mmap: libc.func("void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset)"),
  munmap: libc.func("int munmap(void *addr, size_t length)"),
  memfdCreate: libc.func("int memfd_create(const char *name, unsigned int flags)"),
  eventfd: libc.func("int eventfd(unsigned int initval, int flags)"),
  ftruncate: libc.func("int ftruncate(int fd, int64_t length)"),
  fcntl: libc.func("int fcntl(int fd, int cmd, int arg)"),
  dup: libc.func("int dup(int fd)"),
  strerror: libc.func("const char *strerror(int errnum)"),
};

export const AF_UNIX = 1;
export const SOCK_STREAM = 1;
export const SOCK_CLOEXEC = 0o2000000;
export const SOCK_NONBLOCK = 0o4000;
export const SHUT_RD = 0;
export const SHUT_RDWR = 2;
export const MSG_DONTWAIT = 0x40;
export const MSG_NOSIGNAL = 0x4000;
export const SOL_SOCKET = 1;
export const SCM_RIGHTS = 1;
export const PROT_READ = 1;
export const PROT_WRITE = 2;
export const MAP_SHARED = 1;
const MAP_FAILED = 0xffff_ffff_ffff_ffffn;
export const MFD_CLOEXEC = 1;
export const MFD_ALLOW_SEALING = 2;
export const EFD_CLOEXEC = 0o2000000;
export const EFD_NONBLOCK = 0o4000;
const F_GET_SEALS = 1034;
export const F_SEAL_SHRINK = 0x0002;

export const errnoCodes = koffi.os.errno as Record<string, number>;

export function errno(): number {
  return koffi.errno();
}

export function strerror(code: number): string {
  return String(fns.strerror(code));
}

/** An OS call failed: the call, the errno and its text. */
export class SysError extends Error {
  constructor(
    readonly call: string,
    readonly errno: number,
    detail?: string,
  ) {
    super(`${call}${detail ? ` ${detail}` : ""}: ${strerror(errno)} (errno ${errno})`);
    this.name = "SysError";
  }
}

function check(call: string, ret: number | bigint, detail?: string): number {
  if (Number(ret) < 0) throw new SysError(call, errno(), detail);
  return Number(ret);
}

/** struct sockaddr_un for a path; Linux allows at most 107 bytes plus the NUL. */
function sockaddrUn(path: string): Buffer {
  const bytes = Buffer.from(path, "utf8");
  if (bytes.length > 107)
    throw new SysError("bind", errnoCodes.ENAMETOOLONG ?? 36, `socket path too long: ${path}`);
  const sa = Buffer.alloc(110);
  sa.writeUInt16LE(AF_UNIX, 0);
  bytes.copy(sa, 2);
  return sa;
}

export function listenUnix(path: string, backlog = 4): number {
  const fd = check("socket", fns.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  try {
    const sa = sockaddrUn(path);
    check("bind", fns.bind(fd, sa, sa.length), path);
    check("listen", fns.listen(fd, backlog), path);
    return fd;
  } catch (err) {
    fns.close(fd);
    throw err;
  }
}

export function connectUnix(path: string): number {
  const fd = check("socket", fns.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  try {
    const sa = sockaddrUn(path);
    check("connect", fns.connect(fd, sa, sa.length), path);
    return fd;
  } catch (err) {
    fns.close(fd);
    throw err;
  }
}

export function socketPair(): [number, number] {
  const sv = [-1, -1];
  check("socketpair", fns.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
  return [sv[0] as number, sv[1] as number];
}

export function shutdownFd(fd: number, how = SHUT_RDWR): void {
  fns.shutdown(fd, how);
}

export function closeFd(fd: number): void {
  if (fd >= 0) fns.close(fd);
}

export function dupFd(fd: number): number {
  return check("dup", fns.dup(fd));
}

/**
 * Sends as much of `data` as the socket takes without blocking; returns the count sent, 0 when
 * the socket buffer is full. `fds` go with the first byte (SCM_RIGHTS). Throws on a dead socket.
 */
export function sendNonBlocking(fd: number, data: Uint8Array, fds: readonly number[] = []): number {
  const flags = MSG_DONTWAIT | MSG_NOSIGNAL;
  let ret: number;
  if (fds.length === 0) {
    ret = Number(fns.send(fd, data, data.length, flags));
  } else {
    ret = withMsghdr(data, fds, (msg) => Number(fns.sendmsg(fd, msg, flags)));
  }
  if (ret < 0) {
    const e = errno();
    if (e === errnoCodes.EAGAIN || e === errnoCodes.EWOULDBLOCK) return 0;
    throw new SysError("sendmsg", e);
  }
  return ret;
}

/** Builds a struct msghdr with one iovec and an SCM_RIGHTS control message in native memory. */
function withMsghdr<T>(data: Uint8Array, fds: readonly number[], fn: (msg: bigint) => T): T {
  const ctlLen = 16 + Math.ceil((fds.length * 4) / 8) * 8;
  const total = 64 + 16 + ctlLen + data.length;
  const mem = koffi.alloc("uint8_t", total) as bigint;
  try {
    const ab = koffi.view(mem, total);
    const dv = new DataView(ab);
    const iov = mem + 64n;
    const ctl = iov + 16n;
    const buf = ctl + BigInt(ctlLen);
    // struct msghdr: name, namelen, iov, iovlen, control, controllen, flags
    dv.setBigUint64(0, 0n, true);
    dv.setUint32(8, 0, true);
    dv.setBigUint64(16, iov, true);
    dv.setBigUint64(24, 1n, true);
    dv.setBigUint64(32, ctl, true);
    dv.setBigUint64(40, BigInt(ctlLen), true);
    dv.setInt32(48, 0, true);
    dv.setBigUint64(64, buf, true);
    dv.setBigUint64(72, BigInt(data.length), true);
    // struct cmsghdr: len, level, type, data
    dv.setBigUint64(80, BigInt(16 + fds.length * 4), true);
    dv.setInt32(88, SOL_SOCKET, true);
    dv.setInt32(92, SCM_RIGHTS, true);
    fds.forEach((f, i) => {
      dv.setInt32(96 + i * 4, f, true);
    });
    new Uint8Array(ab, 80 + ctlLen, data.length).set(data);
    return fn(mem);
  } finally {
    koffi.free(mem);
  }
}

export interface Mapping {
  readonly address: bigint;
  readonly length: number;
}

/** mmap(MAP_SHARED) of `length` bytes of `fd` at `offset`. */
export function mapShared(fd: number, offset: bigint, length: number, writable: boolean): Mapping {
  const prot = PROT_READ | (writable ? PROT_WRITE : 0);
  const addr = fns.mmap(0n, length, prot, MAP_SHARED, fd, offset) as bigint;
  if (addr === MAP_FAILED || addr === -1n)
    throw new SysError("mmap", errno(), `fd ${fd} offset ${offset} length ${length}`);
  return { address: addr, length };
}

export function unmap(m: Mapping): void {
  fns.munmap(m.address, m.length);
}

/** A Uint8Array over mapped memory. Never keep it past the mapping's unmap: the memory vanishes. */
export function viewOf(m: Mapping, offset: number, length: number): Uint8Array {
  return new Uint8Array(koffi.view(m.address + BigInt(offset), length));
}

export function memfdCreate(name: string, size: number): number {
  const fd = check("memfd_create", fns.memfdCreate(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fns.ftruncate(fd, size) < 0) {
    const e = errno();
    fns.close(fd);
    throw new SysError("ftruncate", e);
  }
  return fd;
}

export function eventFd(nonBlocking = true): number {
  return check("eventfd", fns.eventfd(0, EFD_CLOEXEC | (nonBlocking ? EFD_NONBLOCK : 0)));
}

export function getSeals(fd: number): number {
  const r = fns.fcntl(fd, F_GET_SEALS, 0);
  return Math.max(r, 0);
}

/** What an fd is, from /proc/self/fd: "anon_inode:[eventfd]", "/memfd:name (deleted)", "socket:[..]". */
export function fdKind(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "";
  }
}

export function isEventFd(fd: number): boolean {
  return fdKind(fd) === "anon_inode:[eventfd]";
}

/** Number of open fds in this process (for leak checks). */
export function countOpenFds(pid: number | "self" = "self"): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
