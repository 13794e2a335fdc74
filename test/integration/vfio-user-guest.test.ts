// A real guest (debian:6.12 kernel, the project's initramfs) under QEMU 10.2 with
// -device vfio-user-pci connected to the hil-testdev server process. The guest enumerates the
// device, reads/writes BAR0 with busybox devmem, loads hil_testdev.ko, runs DMA whose result it
// reads back, and sees the MSI-X count rise in /proc/interrupts. The same test runs with guest RAM
// shared (memfd share=on: DMA through mmap) and private (DMA_READ/DMA_WRITE messages).
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { buildImageFor } from "../../harness/bench/vfio-user-guest.ts";
import { startServerProcess } from "../../qemu/device-server/process.ts";
import { vfioUserPciArgs } from "../../qemu/launch/cmdline.ts";
import { type Guest, startGuest } from "../../qemu/launch/guest.ts";
import { Reg, TESTDEV_ID_VALUE } from "../../qemu/testdev/device.ts";
import {
  devmemRead,
  devmemWrite,
  findTestdev,
  fnv1a,
  interruptCount,
  loadTestdevModule,
  seededBytes,
  testdevCommand,
} from "../../qemu/testdev/guest-ops.ts";

const KERNEL = process.env.HIL_TEST_KERNEL ?? "debian:6.12";

t.setTimeout(60 * 60 * 1000);

for (const shared of [true, false]) {
  const name = shared ? "shared memory (memfd share=on, mmap)" : "messages (private RAM, DMA_READ/WRITE)";
  t.test(`hil-testdev in a real guest, DMA over ${name}`, async (t) => {
    const image = await buildImageFor(KERNEL);
    const dir = mkdtempSync(join(tmpdir(), "hil-vfu-guest-"));
    const socket = join(dir, "testdev.sock");
    const traceFile = join(dir, "trace.jsonl");
    const server = await startServerProcess({ socketPath: socket, traceFile });
    let guest: Guest | undefined;
    t.teardown(async () => {
      await guest?.dispose();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    guest = await startGuest({
      qemu: image.qemu,
      kernel: image.kernel.bzImage,
      initrd: image.initrd,
      memoryMiB: 512,
      sharedMemory: shared,
      extraQemuArgs: vfioUserPciArgs(socket, "testdev"),
      keepConsole: process.env.HIL_KEEP_CONSOLE
        ? join(process.env.HIL_KEEP_CONSOLE, `console-${shared ? "shared" : "msg"}.log`)
        : undefined,
    });

    // Enumeration: the IDs in sysfs.
    const dev = await findTestdev(guest);
    t.equal(dev.vendor, 0x1ded, "vendor ID");
    t.equal(dev.device, 0x7e57, "device ID");
    t.equal(dev.subsystemVendor, 0x1ded, "subsystem vendor");
    t.equal(dev.subsystemDevice, 0x7e57, "subsystem device");
    t.equal(dev.classCode, 0xff0000, "class");
    t.equal(dev.bar0Size, 0x1000n, "BAR0 is 4 KiB");
    t.ok(dev.bar0 > 0n, `BAR0 at 0x${dev.bar0.toString(16)}`);

    // BAR0 registers through /dev/mem.
    t.equal(await devmemRead(guest, dev.bar0 + BigInt(Reg.ID)), BigInt(TESTDEV_ID_VALUE), "ID register");
    await devmemWrite(guest, dev.bar0 + BigInt(Reg.SCRATCH), 0x5ca1ab1en);
    t.equal(
      await devmemRead(guest, dev.bar0 + BigInt(Reg.SCRATCH)),
      0x5ca1ab1en,
      "scratch register round trip",
    );
    await devmemWrite(guest, dev.bar0 + BigInt(Reg.SCRATCH64), 0x0123456789abcdefn, 64);
    t.equal(
      await devmemRead(guest, dev.bar0 + BigInt(Reg.SCRATCH64), 64),
      0x0123456789abcdefn,
      "64-bit access",
    );
    t.equal(await devmemRead(guest, dev.bar0 + BigInt(Reg.SCRATCH64) + 4n, 16), 0x4567n, "16-bit access");

    // The driver: MSI-X vector, DMA buffers.
    await loadTestdevModule(guest, image.module.path, dev);
    const before = await interruptCount(guest);
    t.match(before.line, /hil_testdev/, `in /proc/interrupts: ${before.line}`);
    t.match(before.line, /MSI/, "an MSI-X vector");

    // DMA copy: the CPU seeds src, the device copies it, the guest reads dst back.
    await testdevCommand(guest, dev, "clear");
    await testdevCommand(guest, dev, "seed 0 65536 17");
    await testdevCommand(guest, dev, "copy 0 100 65536");
    const sum = await testdevCommand(guest, dev, "sum dst 100 65536");
    t.equal(
      sum,
      `ok fnv=${fnv1a(seededBytes(65536, 17)).toString(16).padStart(8, "0")}`,
      "copied bytes in dst",
    );
    t.equal(
      await testdevCommand(guest, dev, "peek dst 96 8"),
      "ok 0000000011181f26",
      "bytes around the copy",
    );

    // DMA fill.
    await testdevCommand(guest, dev, "fill 200000 300000 0xa1b2c3d4");
    t.equal(
      await testdevCommand(guest, dev, "peek dst 199998 8"),
      "ok 0000d4c3b2a1d4c3",
      "fill pattern starts at its offset",
    );
    t.equal(
      await testdevCommand(guest, dev, "peek dst 499996 8"),
      "ok d4c3b2a100000000",
      "and ends at its length",
    );

    // The MSI-X count rose: one interrupt per DMA command.
    const after = await interruptCount(guest);
    t.ok(after.count >= before.count + 2, `interrupts ${before.count} -> ${after.count}`);
    const irqAttr = await guest.exec(`cat ${dev.sysfs}/irq_count`);
    t.equal(Number(irqAttr.stdout.trim()), after.count, "the driver counted the same");

    // The trace shows the DMA went the intended way.
    const dma = readFileSync(traceFile, "utf8")
      .split("\n")
      .filter((l) => l.includes('"kind":"dma"'))
      .map((l) => JSON.parse(l) as { path: string; length: number });
    const bulk = dma.filter((d) => d.length >= 65536);
    t.ok(bulk.length >= 2, `${bulk.length} bulk DMA accesses traced`);
    t.ok(
      bulk.every((d) => d.path === (shared ? "shared" : "message")),
      `all over ${shared ? "shared memory" : "messages"}`,
    );
    await guest.dispose();
    guest = undefined;
    const end = await server.stop();
    t.same(end, { code: 0, signal: null }, "server exits cleanly");
    t.notOk(existsSync(socket), "socket removed");
  });
}
