// The erdma glue behind a real vfio-user server, driven by the Node client as QEMU would: the PCI
// identity and BARs the driver checks, MSI-X with the profile's vector count, the init handshake
// through REGION_WRITE, one command through the CMDQ with guest memory shared (memfd) or served by
// DMA_READ/DMA_WRITE messages, the MSI-X interrupt of an armed CMDQ, DEVICE_RESET and disconnects.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { type ErdmaTraceEvent, profileReflush } from "../../qemu/erdma/index.ts";
import { ErdmaVfioDevice, keepServerEvent } from "../../qemu/erdma/vfio-user-device.ts";
import { drainEventFd, VfioUserClient } from "../../qemu/vfio-user/client.ts";
import { closeFd } from "../../qemu/vfio-user/libc.ts";
import { Vfio } from "../../qemu/vfio-user/protocol.ts";
import { startServer, type TraceEvent } from "../../qemu/vfio-user/server.ts";
import * as R from "../doubles/erdma-requests.ts";

const CONFIG = Vfio.PCI_CONFIG_REGION_INDEX;
const MEM = 0x1_0000_0000n;
const MEM_SIZE = 1 << 20;
const MAC = "52:54:00:12:34:56";

async function until(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The driver's layout: CMDQ SQ 512 WQEBBs, CQ 512 CQEs, EQ 128 EQEs, AEQ 4096 EQEs, doorbell records. */
const sq = 0x0_0000;
const cq = 0x4_0000;
const eq = 0x4_8000;
const aeq = 0x5_0000;
const dbrec = 0x6_0000;

/** The driver's init handshake: queue addresses and sizes, then DEV_CTRL.INIT (the CMDQ SQ at `sqAddress`). */
async function initDevice(c: VfioUserClient, sqAddress = MEM + BigInt(sq)): Promise<void> {
  const w32 = (off: number, v: number | bigint) => c.write32(0, off, Number(v));
  const w64 = (off: number, v: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    return c.regionWrite(0, off, b);
  };
  await w32(0x44, MEM >> 32n);
  await w32(0x40, Number(MEM & 0xffff_ffffn) + aeq);
  await w32(0x48, 4096);
  await w64(0x78, MEM + BigInt(dbrec + 0x18));
  await w32(0x24, sqAddress >> 32n);
  await w32(0x20, Number(sqAddress & 0xffff_ffffn));
  await w32(0x30, 512);
  await w64(0x60, MEM + BigInt(dbrec));
  await w32(0x2c, MEM >> 32n);
  await w32(0x28, Number(MEM & 0xffff_ffffn) + cq);
  await w64(0x68, MEM + BigInt(dbrec + 8));
  await w32(0x3c, MEM >> 32n);
  await w32(0x38, Number(MEM & 0xffff_ffffn) + eq);
  await w32(0x34, 128);
  await w64(0x70, MEM + BigInt(dbrec + 0x10));
  await w32(0x10, 2); // DEV_CTRL.INIT
}

async function harness(profile = profileReflush) {
  const dir = mkdtempSync(join(tmpdir(), "hil-erdma-unit-"));
  const socket = join(dir, "erdma.sock");
  const core: ErdmaTraceEvent[] = [];
  const server: (TraceEvent & { t: number })[] = [];
  const device = new ErdmaVfioDevice({ mac: MAC, profile, trace: (e) => core.push(e) });
  const srv = await startServer({ socketPath: socket, device, trace: (e) => server.push(e), log: () => {} });
  const client = VfioUserClient.connect(socket);
  await srv.waitForClient();
  await client.negotiate();
  return {
    device,
    client,
    core,
    server,
    srv,
    async close() {
      await client.close();
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

t.test("PCI identity, BAR0, BAR2 and MSI-X as the driver expects them", async (t) => {
  const h = await harness({ ...profileReflush, msixVectors: 5 });
  t.teardown(() => h.close());
  const c = h.client;
  const cfg = await c.regionRead(CONFIG, 0, 64);
  t.equal(cfg.readUInt16LE(0), 0x1ded, "vendor: Alibaba");
  t.equal(cfg.readUInt16LE(2), 0x107f, "device: erdma");
  t.equal(cfg.readUIntLE(9, 3), 0x020000, "class: Ethernet controller");
  t.equal(cfg.readUInt32LE(0x10) & 0x7, 0x4, "BAR0: 64-bit memory");
  t.equal(cfg.readUInt32LE(0x18) & 0x7, 0x4, "BAR2: 64-bit memory");
  t.equal((await c.regionInfo(0)).size, 1n << 20n, "BAR0 is 1 MiB");
  t.equal((await c.regionInfo(2)).size, 0x1000n, "BAR2 holds the MSI-X table and PBA");
  for (const i of [1, 3, 4, 5]) t.equal((await c.regionInfo(i)).size, 0n, `no region ${i}`);
  t.equal((await c.irqInfo(Vfio.PCI_MSIX_IRQ_INDEX)).count, 5, "MSI-X vectors from the profile");
  // the MSI-X capability: table and PBA in BAR2
  let cap = cfg.readUInt8(0x34);
  let msix = -1;
  const full = await c.regionRead(CONFIG, 0, 256);
  while (cap) {
    if (full.readUInt8(cap) === 0x11) msix = cap;
    cap = full.readUInt8(cap + 1);
  }
  t.ok(msix > 0, "an MSI-X capability");
  t.equal((full.readUInt16LE(msix + 2) & 0x7ff) + 1, 5, "table size");
  t.equal(full.readUInt32LE(msix + 4), 0x0 | 2, "table at BAR2+0");
  t.equal(full.readUInt32LE(msix + 8), 0x800 | 2, "PBA at BAR2+0x800");
  t.equal(await c.read32(0, 0x00), profileReflush.version, "VERSION");
  t.equal(await c.read32(0, 0x18), 0x00123456, "NETDEV_MAC_L");
  t.equal(await c.read32(0, 0x1c), 0x5254, "NETDEV_MAC_H");
  t.equal(await c.read32(0, 0x14), 1, "DEV_ST: RESET_DONE");
});

for (const shared of [true, false]) {
  t.test(
    `init handshake and a command through the CMDQ, guest memory ${shared ? "shared" : "by messages"}`,
    async (t) => {
      const h = await harness();
      t.teardown(() => h.close());
      const c = h.client;
      await c.write32(CONFIG, 0x04, 0x6); // memory space + bus master
      const mem = await c.addMemory(MEM, MEM_SIZE, shared);
      const fds = await c.setMsixEventFds(0, 2);
      t.teardown(() => {
        for (const fd of fds) closeFd(fd);
      });
      const view = Buffer.from(mem.buffer, mem.byteOffset, mem.byteLength);
      const w64 = (off: number, v: bigint) => {
        const b = Buffer.alloc(8);
        b.writeBigUInt64LE(v);
        return c.regionWrite(0, off, b);
      };
      await initDevice(c);
      t.equal(
        await c.read32(0, 0x14),
        3,
        "DEV_ST: INIT_DONE right after INIT (the register write changed state)",
      );

      const post = async (index: number, cookie: number) => {
        const req = R.queryDevice();
        const at = sq + ((index * 4) % 512) * 32;
        view.set(req, at);
        const hdr = view.readBigUInt64LE(at) | BigInt(index * 4 + 4) | (BigInt(cookie) << 32n) | (3n << 52n);
        view.writeBigUInt64LE(hdr, at);
        await w64(0x200, BigInt(index * 4 + 4)); // CMDQ_SQDB
      };
      // polled mode: the CQE appears, no interrupt
      await post(0, 7);
      await until(() => view.readUInt32BE(cq) >>> 31 === 1, "the first CQE");
      t.equal(view.readUInt32BE(cq) & 0xff, 0, "status OK");
      t.equal(view.readUInt32BE(cq + 4), 0, "the SQE's WQEBB index");
      const cap0 = (BigInt(view.readUInt32BE(cq + 12)) << 32n) | BigInt(view.readUInt32BE(cq + 8));
      t.equal(
        Number((cap0 >> 40n) & 0xffn),
        profileReflush.caps.maxCqeLog2,
        "QUERY_DEVICE response: max CQE",
      );
      t.equal(drainEventFd(fds[0] as number), 0, "no interrupt while the CMDQ CQ is not armed");
      // event mode: arm the CMDQ CQ; the next completion writes a CMDQ EQE and raises vector 0
      await w64(0x300, (1n << 31n) | 1n);
      await post(1, 8);
      await until(() => view.readUInt32BE(cq + 32) >>> 31 === 1, "the second CQE");
      await until(() => view.readUInt32LE(eq) >>> 31 === 1, "the CMDQ EQE");
      await until(() => drainEventFd(fds[0] as number) > 0, "MSI-X vector 0");
      const cmds = h.core.filter((e) => e.kind === "cmd");
      t.same(
        cmds.map((e) => [e.name, e.status, e.cookie]),
        [
          ["QUERY_DEVICE", 0, 7],
          ["QUERY_DEVICE", 0, 8],
        ],
        "both commands in the hardware trace",
      );
      t.ok(
        h.core.some((e) => e.kind === "irq" && e.vector === 0 && e.delivered),
        "the interrupt was delivered (eventfd written)",
      );
      if (!shared) {
        // reply to MMIO first, DMA after: the first doorbell's reply went out before the device read the SQE
        type Msg = { kind: string; id: number; command: string; info?: { offset?: string } };
        const msgs = h.server as unknown as Msg[];
        const doorbell = msgs.find(
          (e) => e.kind === "recv" && e.command === "REGION_WRITE" && e.info?.offset === "0x200",
        );
        const reply = msgs.findIndex(
          (e) => e.kind === "send" && e.command === "REGION_WRITE" && e.id === doorbell?.id,
        );
        const firstDma = msgs.findIndex((e) => e.kind === "send" && e.command === "DMA_READ");
        t.ok(
          doorbell && reply >= 0 && firstDma > reply,
          "the doorbell write was answered before the first DMA_READ",
        );
      }
      t.same(
        h.core.filter((e) => ["warn", "internal-error", "dma-fault"].includes(e.kind)),
        [],
        "no warning, fault or internal error",
      );
      // DEVICE_RESET: back to power-on state
      await c.reset();
      t.equal(await c.read32(0, 0x14), 1, "DEV_ST: RESET_DONE after DEVICE_RESET");
      t.notOk(h.device.device.initialized, "the CMDQ is gone");
    },
  );
}

for (const shared of [true, false]) {
  t.test(
    `a doorbell for a queue the client unmapped (${shared ? "shared" : "by messages"}): an error CQE, no access`,
    async (t) => {
      const h = await harness();
      t.teardown(() => h.close());
      const c = h.client;
      await c.write32(CONFIG, 0x04, 0x6);
      // two regions: the CMDQ SQ, then the CQ, EQs and doorbell records
      await c.addMemory(MEM, cq, shared);
      const rest = await c.addMemory(MEM + BigInt(cq), MEM_SIZE - cq, shared);
      const view = Buffer.from(rest.buffer, rest.byteOffset, rest.byteLength);
      await initDevice(c);
      t.equal(await c.read32(0, 0x14), 3, "INIT_DONE: every queue was mapped");
      await c.removeMemory(MEM); // the guest takes the SQ away under the device
      const db = Buffer.alloc(8);
      db.writeBigUInt64LE(4n);
      await c.regionWrite(0, 0x200, db); // CMDQ_SQDB: one SQE, in memory no longer mapped
      await until(() => view.readUInt32BE(0) >>> 31 === 1, "the CQE");
      t.not(view.readUInt32BE(0) & 0xff, 0, "the command completes in error");
      const faults = h.core.filter((e) => e.kind === "dma-fault");
      t.match(
        faults,
        [{ kind: "dma-fault", address: `0x${MEM.toString(16)}`, access: "read", context: "CMDQ SQE" }],
        "one dma-fault event names the access",
      );
      t.match(String(faults[0]?.reason), /outside mapped memory/, "refused by the server's DMA table");
      t.same(
        h.core.filter((e) => e.kind === "internal-error"),
        [],
        "no internal error",
      );
      t.equal(await c.read32(0, 0x00), profileReflush.version, "the device still answers");
    },
  );
}

t.test("a client that goes away resets the device", async (t) => {
  const h = await harness();
  t.teardown(() => h.close());
  await h.client.write32(0, 0x10, 2); // INIT without queues: refused, stays in reset
  await h.client.close();
  await until(() => !h.srv.connected, "the disconnect");
  t.ok(
    h.core.some((e) => e.kind === "state" && e.object === "device" && e.to === "reset (client disconnected)"),
    "reset on disconnect",
  );
});

t.test("the server events an erdma trace keeps", async (t) => {
  const ev = (e: Partial<TraceEvent> & { kind: string }) => e as TraceEvent;
  t.ok(keepServerEvent(ev({ kind: "connect" })));
  t.ok(keepServerEvent(ev({ kind: "config", change: {} })));
  t.ok(keepServerEvent(ev({ kind: "recv", command: "DMA_MAP" })));
  t.ok(keepServerEvent(ev({ kind: "refused", command: "REGION_READ" })));
  t.notOk(keepServerEvent(ev({ kind: "recv", command: "REGION_READ" })), "register accesses are the core's");
  t.notOk(keepServerEvent(ev({ kind: "send", command: "DMA_READ" })));
  t.notOk(keepServerEvent(ev({ kind: "irq" })), "interrupts are the core's");
  t.notOk(keepServerEvent(ev({ kind: "dma" })));
});
