// Receive side of a vfio-user socket, run in a worker thread: blocking accept4/recvmsg through koffi
// (Node's net module drops SCM_RIGHTS ancillary data). It frames messages by the 16-byte header's
// size field and posts each whole message, with the fds that arrived with it, to the main thread.
// Plain JavaScript on purpose: a worker does not inherit the TypeScript loader.
//
// workerData: { listenFd, connFd, maxMessage, maxFds, control: SharedArrayBuffer(8) }
//   listenFd >= 0: accept a client, serve it, wait for the main thread's go-ahead, accept again.
//   connFd >= 0:   serve this one connection (client side), then exit.
// control[0] = 1 asks the worker to stop; control[1] = 1 lets it accept the next client.
// The worker never closes a connection fd: the main thread owns fd lifetimes (it also sends on them).
import { parentPort, workerData } from "node:worker_threads";
import koffi from "koffi";

const libc = koffi.load("libc.so.6");
const accept4 = libc.func("int accept4(int fd, void *addr, void *addrlen, int flags)");
const recvmsg = libc.func("intptr_t recvmsg(int fd, void *msg, int flags)");

const SOCK_CLOEXEC = 0o2000000;
const MSG_CMSG_CLOEXEC = 0x40000000;
const MSG_CTRUNC = 0x8;
const SOL_SOCKET = 1;
const SCM_RIGHTS = 1;
const { EINTR, EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED } = koffi.os.errno;

const { listenFd, connFd, maxMessage, maxFds, control } = workerData;
const ctl = new Int32Array(control);
const stopping = () => Atomics.load(ctl, 0) === 1;
const post = (m, transfer) => parentPort.postMessage(m, transfer);

// Native memory: msghdr (64) + iovec (16) + control buffer + message buffer.
const ctlCap = 16 + Math.ceil((maxFds * 4) / 8) * 8;
const total = 80 + ctlCap + maxMessage;
const mem = koffi.alloc("uint8_t", total);
const ab = koffi.view(mem, total);
const dv = new DataView(ab);
const iovAddr = mem + 64n;
const ctlAddr = mem + 80n;
const bufOff = 80 + ctlCap;
const bufAddr = mem + BigInt(bufOff);

/** recvmsg into the message buffer at [off, off+len); collects SCM_RIGHTS fds. */
function recvInto(fd, off, len, state) {
  dv.setBigUint64(0, 0n, true);
  dv.setUint32(8, 0, true);
  dv.setBigUint64(16, iovAddr, true);
  dv.setBigUint64(24, 1n, true);
  dv.setBigUint64(32, ctlAddr, true);
  dv.setBigUint64(40, BigInt(ctlCap), true);
  dv.setInt32(48, 0, true);
  dv.setBigUint64(64, bufAddr + BigInt(off), true);
  dv.setBigUint64(72, BigInt(len), true);
  for (;;) {
    const n = Number(recvmsg(fd, mem, MSG_CMSG_CLOEXEC));
    if (n < 0) {
      const e = koffi.errno();
      if (e === EINTR) continue;
      return -e;
    }
    const flags = dv.getInt32(48, true);
    if (flags & MSG_CTRUNC) state.ctrunc = true;
    const ctlLen = Number(dv.getBigUint64(40, true));
    let p = 0;
    while (p + 16 <= ctlLen) {
      const cmsgLen = Number(dv.getBigUint64(80 + p, true));
      const level = dv.getInt32(80 + p + 8, true);
      const type = dv.getInt32(80 + p + 12, true);
      if (cmsgLen < 16) break;
      if (level === SOL_SOCKET && type === SCM_RIGHTS) {
        const count = Math.floor((cmsgLen - 16) / 4);
        for (let i = 0; i < count; i++) state.fds.push(dv.getInt32(80 + p + 16 + i * 4, true));
      }
      p += 16 + Math.ceil((cmsgLen - 16) / 8) * 8;
    }
    return n;
  }
}

/** Reads exactly len bytes at off unless the peer closes; returns the count read or -errno. */
function readFully(fd, off, len, state) {
  let done = 0;
  while (done < len) {
    const n = recvInto(fd, off + done, len - done, state);
    if (n < 0) return done > 0 ? done : n;
    if (n === 0) break;
    done += n;
  }
  return done;
}

function serve(fd) {
  for (;;) {
    const state = { fds: [], ctrunc: false };
    const got = readFully(fd, 0, 16, state);
    if (got < 16) {
      const reason =
        got === 0
          ? "peer closed"
          : got < 0
            ? `recvmsg failed: errno ${-got}`
            : `peer closed inside a header (${got} bytes)`;
      post({ type: "closed", reason, clean: got === 0, fds: state.fds });
      return;
    }
    const size = dv.getUint32(bufOff + 4, true);
    if (size < 16 || size > maxMessage) {
      const header = ab.slice(bufOff, bufOff + 16);
      post(
        {
          type: "closed",
          reason: `message size ${size} outside 16..${maxMessage}: cannot frame the stream`,
          clean: false,
          header,
          fds: state.fds,
        },
        [header],
      );
      return;
    }
    if (size > 16) {
      const body = readFully(fd, 16, size - 16, state);
      if (body < size - 16) {
        post({
          type: "closed",
          reason: `peer closed inside a message (${16 + Math.max(body, 0)} of ${size} bytes)`,
          clean: false,
          fds: state.fds,
        });
        return;
      }
    }
    const data = ab.slice(bufOff, bufOff + size);
    post({ type: "message", data, fds: state.fds, ctrunc: state.ctrunc }, [data]);
  }
}

function main() {
  if (listenFd < 0) {
    serve(connFd);
    return;
  }
  while (!stopping()) {
    const fd = accept4(listenFd, null, null, SOCK_CLOEXEC);
    if (fd < 0) {
      const e = koffi.errno();
      if (stopping()) break;
      if (e === EINTR || e === ECONNABORTED) continue;
      post({ type: "accept-error", errno: e });
      if (e === EMFILE || e === ENFILE || e === ENOBUFS || e === ENOMEM) {
        Atomics.wait(ctl, 0, 0, 200);
        continue;
      }
      break;
    }
    post({ type: "accepted", fd });
    serve(fd);
    // Wait until the main thread has closed fd and cleaned up (or asks us to stop).
    while (!stopping() && Atomics.load(ctl, 1) === 0) Atomics.wait(ctl, 1, 0, 1000);
    Atomics.store(ctl, 1, 0);
  }
}

try {
  main();
} catch (err) {
  post({ type: "fatal", message: String(err?.stack ?? err) });
} finally {
  koffi.free(mem);
  post({ type: "exit" });
}
