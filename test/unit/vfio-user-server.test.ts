// The server end to end with the fake client: lifecycle (socket file, fds, one client at a time,
// reconnects), what QEMU asks at realize, BAR access splitting, MSI-X table/PBA, reset, the trace.
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { Reg, TESTDEV_ID_VALUE, TestDevice } from "../../qemu/testdev/device.ts";
import { drainEventFd, VfioUserClient } from "../../qemu/vfio-user/client.ts";
import type { DeviceModel } from "../../qemu/vfio-user/device.ts";
import { closeFd, countOpenFds } from "../../qemu/vfio-user/libc.ts";
import { Command, Errno, Flags, Vfio } from "../../qemu/vfio-user/protocol.ts";
import { startServer } from "../../qemu/vfio-user/server.ts";
import { startHarness, until, waitDisconnected, withClient } from "./vfio-user-helpers.ts";

t.test("lifecycle: socket created, stale one replaced, live one refused, all removed on close", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-life-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sock = join(dir, "dev.sock");
  const fdsBefore = countOpenFds();
  const a = await startServer({ socketPath: sock, device: new TestDevice(), log: () => {} });
  t.ok(existsSync(sock), "socket file exists");
  await t.rejects(startServer({ socketPath: sock, device: new TestDevice(), log: () => {} }), /in use/);
  await a.close();
  t.notOk(existsSync(sock), "removed on close");
  t.equal(countOpenFds(), fdsBefore, "no fd left");
  // A file that is not a socket is never removed.
  closeSync(openSync(sock, "w"));
  await t.rejects(startServer({ socketPath: sock, device: new TestDevice(), log: () => {} }), /not a socket/);
  rmSync(sock);
  // Closing with a client connected drops it.
  const b = await startServer({ socketPath: sock, device: new TestDevice(), log: () => {} });
  const c = VfioUserClient.connect(sock);
  await c.negotiate();
  await b.close();
  t.ok(await c.waitClosed(), "client saw the close");
  await c.close();
  t.notOk(existsSync(sock));
  rmSync(dir, { recursive: true, force: true });
});

t.test("realize as QEMU does it: version, info, regions 0-7, IRQ info, config space", async (t) => {
  await withClient(async (c) => {
    const info = await c.deviceInfo();
    t.same(info, {
      argsz: 16,
      flags: Vfio.DEVICE_FLAGS_RESET | Vfio.DEVICE_FLAGS_PCI,
      numRegions: 9,
      numIrqs: 5,
    });
    const sizes = [];
    for (let i = 0; i < 9; i++) {
      const r = await c.regionInfo(i);
      t.equal(r.index, i);
      sizes.push(Number(r.size));
      t.equal(r.flags, r.size > 0n ? 3 : 0, `region ${i} flags`);
    }
    t.same(
      sizes,
      [0x1000, 0, 0x1000, 0, 0, 0, 0, 4096, 0],
      "BAR0 (64-bit: BAR1 empty), BAR2, no ROM, config, no VGA",
    );
    t.same(await c.irqInfo(Vfio.PCI_MSIX_IRQ_INDEX), { argsz: 16, flags: 9, index: 2, count: 4 });
    for (const i of [0, 1, 3, 4]) t.equal((await c.irqInfo(i)).count, 0, `IRQ index ${i} has no vectors`);
    const cfg = await c.regionRead(Vfio.PCI_CONFIG_REGION_INDEX, 0, 4096);
    t.equal(cfg.readUInt32LE(0), 0x7e571ded);
    t.equal(cfg[0x34], 0x40, "capability pointer");
  });
});

t.test(
  "one client at a time; the next is served after the first leaves; device state survives",
  async (t) => {
    const h = await startHarness();
    const first = await h.client();
    await first.write32(0, Reg.SCRATCH, 0xabcd);
    const second = VfioUserClient.connect(h.socket);
    h.clients.push(second);
    const version = second.negotiate();
    let answered = false;
    version.then(() => {
      answered = true;
    });
    await new Promise((r) => setTimeout(r, 150));
    t.notOk(answered, "the second waits while the first is connected");
    await first.close();
    await version;
    t.equal(await second.read32(0, Reg.SCRATCH), 0xabcd, "state kept across clients");
    t.equal(h.server.stats.connects, 2);
    await second.close();
    await waitDisconnected(h);
    await h.close();
  },
);

t.test("BAR access: any size and alignment is split into naturally aligned accesses", async (t) => {
  await withClient(async (c) => {
    await c.regionWrite(0, Reg.SCRATCH64, Buffer.from("0123456789abcdef", "hex"));
    t.equal((await c.regionRead(0, Reg.SCRATCH64, 8)).toString("hex"), "0123456789abcdef", "8-byte access");
    t.equal(
      (await c.regionRead(0, Reg.SCRATCH64 + 1, 5)).toString("hex"),
      "23456789ab",
      "odd offset, 5 bytes",
    );
    await c.regionWrite(0, Reg.SCRATCH64 + 3, Buffer.from("ffff", "hex"));
    t.equal((await c.regionRead(0, Reg.SCRATCH64, 8)).toString("hex"), "012345ffff abcdef".replace(" ", ""));
    t.equal((await c.regionRead(0, 0, 4)).readUInt32LE(0), TESTDEV_ID_VALUE);
    await c.regionWrite(0, Reg.ID, Buffer.alloc(4));
    t.equal((await c.regionRead(0, 0, 4)).readUInt32LE(0), TESTDEV_ID_VALUE, "read-only register");
    t.equal((await c.regionRead(0, 0x800, 16)).toString("hex"), "0".repeat(32), "unused space reads zero");
  });
});

t.test("MSI-X table and PBA in BAR2; a vector without an eventfd is marked pending", async (t) => {
  await withClient(async (c, h) => {
    const table = await c.regionRead(2, 0, 64);
    for (let v = 0; v < 4; v++) t.equal(table.readUInt32LE(v * 16 + 12), 1, `vector ${v} masked at reset`);
    await c.regionWrite(2, 16, Buffer.from("00f0e0fe00000000aa000000", "hex"));
    t.equal(
      (await c.regionRead(2, 16, 12)).toString("hex"),
      "00f0e0fe00000000aa000000",
      "table entry written",
    );
    // Trigger vector 2 (no eventfd yet) through SET_IRQS DATA_BOOL.
    await c.setIrqs({
      flags: Vfio.IRQ_SET_DATA_BOOL | Vfio.IRQ_SET_ACTION_TRIGGER,
      index: 2,
      start: 2,
      count: 1,
      data: Buffer.from([1]),
    });
    t.equal((await c.regionRead(2, 0x800, 8)).readBigUInt64LE(0), 0b100n, "PBA bit 2");
    await c.regionWrite(2, 0x800, Buffer.alloc(8, 0xff));
    t.equal((await c.regionRead(2, 0x800, 8)).readBigUInt64LE(0), 0b100n, "PBA is read-only");
    const fds = await c.setMsixEventFds(0, 4);
    t.equal(h.server.irqs.raised[2], 0);
    await c.setIrqs({
      flags: Vfio.IRQ_SET_DATA_NONE | Vfio.IRQ_SET_ACTION_TRIGGER,
      index: 2,
      start: 2,
      count: 2,
    });
    t.same(fds.map(drainEventFd), [0, 0, 1, 1], "DATA_NONE fires vectors 2 and 3");
    await c.reset();
    t.equal((await c.regionRead(2, 0x800, 8)).readBigUInt64LE(0), 0n, "reset clears the PBA");
    t.ok(h.server.irqs.hasEventFd(0), "eventfds survive a device reset");
    for (const fd of fds) closeFd(fd);
  });
});

t.test("DEVICE_RESET: registers, config space and command register back to power-on", async (t) => {
  await withClient(async (c, h) => {
    await c.write32(0, Reg.SCRATCH, 77);
    await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, 4, Buffer.from([0x06, 0x00]));
    t.ok(h.server.config.busMaster);
    await c.reset();
    t.equal(await c.read32(0, Reg.SCRATCH), 0);
    t.notOk(h.server.config.busMaster, "command register cleared");
    t.ok(
      h.trace.some((e) => e.kind === "device" && e.event === "reset"),
      "reset traced",
    );
  });
});

t.test("trace: every message in and out, with decoded fields; config changes", async (t) => {
  const closed = await withClient(async (c, h) => {
    await c.write32(0, Reg.SCRATCH, 5);
    await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, 4, Buffer.from([0x06, 0x00]));
    await until(() => h.trace.filter((e) => e.kind === "send").length >= 3, 1000, "replies traced");
    const recv = h.trace.filter((e) => e.kind === "recv");
    t.same(
      recv.map((e) => e.kind === "recv" && e.command),
      ["VERSION", "REGION_WRITE", "REGION_WRITE"],
    );
    const w = recv[1];
    t.same(w?.kind === "recv" && w.info, { region: 0, offset: "0x4", count: 4, value: "0x00000005" });
    t.ok(h.trace.some((e) => e.kind === "config" && e.change.busMaster === true));
    t.ok(
      h.trace.every((e, i, a) => i === 0 || e.t >= (a[i - 1]?.t ?? 0)),
      "timestamps are monotonic",
    );
  });
  // withClient waited for the server to drop the client before closing it: that disconnect
  t.ok(closed.trace.some((e) => e.kind === "disconnect"));
});

t.test("a device handler that throws gets EIO; the server carries on", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-vfu-throw-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const sock = join(dir, "dev.sock");
  const warnings: string[] = [];
  const device: DeviceModel = {
    definition: {
      name: "thrower",
      identity: { vendorId: 0x1ded, deviceId: 0x7e58, classCode: 0xff0000 },
      bars: [
        {
          index: 0,
          size: 0x1000,
          type: "mem32",
          read: (off) => {
            if (off === 8) throw new Error("boom");
            return 0x11;
          },
          write: () => {
            throw new Error("bang");
          },
        },
      ],
      pcie: false,
    },
    attach: () => {},
    reset: () => {},
  };
  const s = await startServer({ socketPath: sock, device, log: (_l, text) => warnings.push(text) });
  const c = VfioUserClient.connect(sock);
  await c.negotiate();
  const r = await c.request(Command.REGION_READ, Buffer.from("08000000000000000000000004000000", "hex"));
  t.equal(r.header.flags & Flags.ERROR, Flags.ERROR);
  t.equal(r.header.error, Errno.EIO);
  await t.rejects(c.write32(0, 0, 1), /EIO/);
  t.equal(await c.read32(0, 0), 0x11, "still serving");
  t.ok(warnings.some((w) => /boom/.test(w)) && warnings.some((w) => /bang/.test(w)), "logged");
  await c.close();
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

t.test("MSI-X function mask: interrupts go pending while masked and are delivered on unmask", async (t) => {
  await withClient(async (c) => {
    const fds = await c.setMsixEventFds(0, 4);
    const control = 0x7c + 2; // MSI-X capability + Message Control
    await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, control, Buffer.from([0x03, 0xc0])); // enable + mask, as QEMU writes
    const fire = (vector: number) =>
      c.setIrqs({
        flags: Vfio.IRQ_SET_DATA_NONE | Vfio.IRQ_SET_ACTION_TRIGGER,
        index: 2,
        start: vector,
        count: 1,
      });
    await fire(1);
    t.equal(drainEventFd(fds[1] as number), 0, "not delivered while masked");
    t.equal((await c.regionRead(2, 0x800, 8)).readBigUInt64LE(0), 0b10n, "pending in the PBA");
    await c.regionWrite(Vfio.PCI_CONFIG_REGION_INDEX, control, Buffer.from([0x03, 0x80])); // unmask
    t.equal(drainEventFd(fds[1] as number), 1, "delivered on unmask");
    t.equal((await c.regionRead(2, 0x800, 8)).readBigUInt64LE(0), 0n, "no longer pending");
    await fire(1);
    t.equal(drainEventFd(fds[1] as number), 1, "unmasked: delivered at once");
    for (const fd of fds) closeFd(fd);
  });
});
