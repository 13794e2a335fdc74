// PCI configuration space: header, BAR sizing, command/status masks, the capability list.
import t from "tap";
import { TestDevice } from "../../qemu/testdev/device.ts";
import type { DeviceDefinition } from "../../qemu/vfio-user/device.ts";
import { CapId, Cfg, MSIX, PciConfigSpace, validateDefinition } from "../../qemu/vfio-user/pci-config.ts";

const def = (): DeviceDefinition => new TestDevice().definition;

function u16(c: PciConfigSpace, off: number): number {
  return c.read(off, 2).readUInt16LE(0);
}
function u32(c: PciConfigSpace, off: number): number {
  return c.read(off, 4).readUInt32LE(0);
}
function w32(c: PciConfigSpace, off: number, v: number) {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return c.write(off, b);
}

t.test("header: IDs, class, header type, no INTx, no ROM", async (t) => {
  const c = new PciConfigSpace(def());
  t.equal(c.size, 4096, "PCI Express: 4 KiB config space");
  t.equal(u16(c, Cfg.VENDOR_ID), 0x1ded);
  t.equal(u16(c, Cfg.DEVICE_ID), 0x7e57);
  t.equal(u16(c, Cfg.SUBSYSTEM_VENDOR_ID), 0x1ded);
  t.equal(u16(c, Cfg.SUBSYSTEM_ID), 0x7e57);
  t.equal(c.read(Cfg.REVISION, 1)[0], 1);
  t.equal(c.read(Cfg.CLASS_PROG, 3).readUIntLE(0, 3), 0xff0000);
  t.equal(c.read(Cfg.HEADER_TYPE, 1)[0], 0);
  t.equal(c.read(Cfg.INTERRUPT_PIN, 1)[0], 0);
  t.equal(u32(c, Cfg.ROM_ADDRESS), 0);
  w32(c, Cfg.ROM_ADDRESS, 0xffffffff);
  t.equal(u32(c, Cfg.ROM_ADDRESS), 0, "ROM BAR is read-only zero");
  t.equal(u32(c, 0x100), 0, "no extended capabilities");
  w32(c, Cfg.VENDOR_ID, 0);
  t.equal(u16(c, Cfg.VENDOR_ID), 0x1ded, "IDs are read-only");
});

t.test("BAR sizing: write all-ones, read back the size mask and flags", async (t) => {
  const c = new PciConfigSpace(def());
  // BAR0: 4 KiB, 64-bit memory (type bits 10b), BAR1 its upper half.
  t.equal(u32(c, Cfg.BAR0), 0x4);
  w32(c, Cfg.BAR0, 0xffffffff);
  w32(c, Cfg.BAR0 + 4, 0xffffffff);
  t.equal(u32(c, Cfg.BAR0) >>> 0, 0xfffff004);
  t.equal(u32(c, Cfg.BAR0 + 4) >>> 0, 0xffffffff);
  const change = w32(c, Cfg.BAR0, 0xfebfd000);
  w32(c, Cfg.BAR0 + 4, 0x1);
  t.same(change.bar?.index, 0);
  t.equal(c.barAddress(0), 0x1_febfd000n);
  // BAR2: 4 KiB, 32-bit.
  w32(c, Cfg.BAR0 + 8, 0xffffffff);
  t.equal(u32(c, Cfg.BAR0 + 8) >>> 0, 0xfffff000);
  // BAR3..5 unimplemented: read-only zero.
  for (const i of [3, 4, 5]) {
    w32(c, Cfg.BAR0 + 4 * i, 0xffffffff);
    t.equal(u32(c, Cfg.BAR0 + 4 * i), 0, `BAR${i} unimplemented`);
  }
  // Sub-dword writes go through the same per-byte masks.
  c.write(Cfg.BAR0 + 8 + 1, Buffer.from([0x12]));
  t.equal(u32(c, Cfg.BAR0 + 8) >>> 0, 0xffff1000, "byte write into BAR2: only bits 12 and up take");
});

t.test("I/O and prefetchable BARs, sizes above 4 GiB", async (t) => {
  const d: DeviceDefinition = {
    name: "t",
    identity: { vendorId: 0x1234, deviceId: 0x5678, classCode: 0x020000 },
    bars: [
      { index: 0, size: 32, type: "io" },
      { index: 2, size: 8 * 2 ** 30, type: "mem64", prefetchable: true },
    ],
    pcie: false,
  };
  const c = new PciConfigSpace(d);
  t.equal(c.size, 256, "conventional PCI: 256 bytes");
  t.equal(u32(c, Cfg.BAR0), 0x1, "I/O space indicator");
  w32(c, Cfg.BAR0, 0xffffffff);
  t.equal(u32(c, Cfg.BAR0) >>> 0, 0xffffffe1);
  t.equal(u32(c, Cfg.BAR0 + 8), 0xc, "64-bit prefetchable");
  w32(c, Cfg.BAR0 + 8, 0xffffffff);
  w32(c, Cfg.BAR0 + 12, 0xffffffff);
  t.equal(u32(c, Cfg.BAR0 + 8) >>> 0, 0xc, "low dword all size bits");
  t.equal(u32(c, Cfg.BAR0 + 12) >>> 0, 0xfffffffe, "8 GiB: bit 33 and up");
  t.equal(u16(c, Cfg.STATUS) & 0x10, 0, "no capabilities: status bit clear");
  t.equal(c.read(Cfg.CAPABILITY_LIST, 1)[0], 0);
  t.equal(u16(c, Cfg.COMMAND), 0);
  c.write(Cfg.COMMAND, Buffer.from([0xff, 0xff]));
  t.equal(u16(c, Cfg.COMMAND), 0x0547, "I/O enable writable with an I/O BAR");
});

t.test("command register: writable bits, bus master; status write-1-to-clear", async (t) => {
  const c = new PciConfigSpace(def());
  t.notOk(c.busMaster);
  const change = c.write(Cfg.COMMAND, Buffer.from([0xff, 0xff]));
  t.equal(u16(c, Cfg.COMMAND), 0x0546, "memory, master, parity, SERR, INTx disable; no I/O BARs");
  t.same(change.command, { old: 0, now: 0x0546 });
  t.ok(c.busMaster);
  c.write(Cfg.COMMAND, Buffer.from([0x02, 0x00]));
  t.notOk(c.busMaster);
  t.equal(u16(c, Cfg.STATUS), 0x0010, "capability list bit");
  c.write(Cfg.STATUS, Buffer.from([0xff, 0xff]));
  t.equal(u16(c, Cfg.STATUS), 0x0010, "status is not writable; cap bit survives");
  c.write(Cfg.CACHE_LINE_SIZE, Buffer.from([0x10]));
  t.equal(c.read(Cfg.CACHE_LINE_SIZE, 1)[0], 0x10);
  c.write(Cfg.INTERRUPT_LINE, Buffer.from([0x0b]));
  t.equal(c.read(Cfg.INTERRUPT_LINE, 1)[0], 0x0b);
  c.reset();
  t.equal(u16(c, Cfg.COMMAND), 0, "reset clears the command register");
  t.equal(c.read(Cfg.INTERRUPT_LINE, 1)[0], 0);
});

t.test("capability list: PCI Express endpoint then MSI-X, dword aligned, terminated", async (t) => {
  const c = new PciConfigSpace(def());
  t.equal(u16(c, Cfg.STATUS) & 0x10, 0x10);
  const walked: { id: number; at: number }[] = [];
  for (let at = c.read(Cfg.CAPABILITY_LIST, 1)[0] as number; at !== 0; ) {
    t.equal(at % 4, 0, `cap at 0x${at.toString(16)} aligned`);
    t.ok(at >= 0x40 && at < 0x100, "in the device-specific area");
    walked.push({ id: c.read(at, 1)[0] as number, at });
    at = c.read(at + 1, 1)[0] as number;
    if (walked.length > 48) break;
  }
  t.same(
    walked.map((w) => w.id),
    [CapId.EXP, CapId.MSIX],
  );
  t.same(
    c.capabilities().map((x) => [x.id, x.offset, x.size]),
    [
      [CapId.EXP, 0x40, 0x3c],
      [CapId.MSIX, 0x7c, 12],
    ],
  );
  const exp = 0x40;
  t.equal(u16(c, exp + 2), 0x0002, "version 2, endpoint");
  t.equal(u32(c, exp + 0x0c) & 0x3ff, 0x11, "link: 2.5 GT/s x1");
  const msix = 0x7c;
  t.equal(u16(c, msix + MSIX.FLAGS), 3, "table size N-1 = 3");
  t.equal(u32(c, msix + MSIX.TABLE), 0x0 | 2, "table at BAR2 + 0");
  t.equal(u32(c, msix + MSIX.PBA), 0x800 | 2, "PBA at BAR2 + 0x800");
});

t.test("MSI-X control: enable and function mask writable, table size read-only", async (t) => {
  const c = new PciConfigSpace(def());
  const msix = 0x7c;
  const change = c.write(msix + MSIX.FLAGS, Buffer.from([0xff, 0xff]));
  t.equal(u16(c, msix + MSIX.FLAGS), 0xc003);
  t.same(change.msix, { enabled: true, masked: true });
  t.same(c.msixState(), { enabled: true, masked: true });
  c.write(msix + MSIX.FLAGS + 1, Buffer.from([0x80]));
  t.same(c.msixState(), { enabled: true, masked: false });
  w32(c, msix + MSIX.TABLE, 0xffffffff);
  t.equal(u32(c, msix + MSIX.TABLE), 2, "table offset/BIR read-only");
});

t.test("device definitions are checked", async (t) => {
  const base = def();
  const bad = (patch: Partial<DeviceDefinition>, why: RegExp) =>
    t.throws(() => validateDefinition({ ...base, ...patch }), why);
  bad({ bars: [{ index: 6, size: 4096, type: "mem32" }] }, /outside 0..5/);
  bad({ bars: [{ index: 5, size: 4096, type: "mem64" }] }, /index 5/);
  bad(
    {
      bars: [
        { index: 0, size: 4096, type: "mem64" },
        { index: 1, size: 4096, type: "mem32" },
      ],
    },
    /overlaps/,
  );
  bad({ bars: [{ index: 0, size: 3000, type: "mem32" }] }, /power of two/);
  bad({ bars: [{ index: 0, size: 8, type: "mem32" }] }, /at least 16/);
  bad({ bars: [{ index: 0, size: 512, type: "io" }] }, /4..256/);
  bad({ msix: { vectors: 0, bar: 2, tableOffset: 0, pbaOffset: 0x800 } }, /1..2048/);
  bad({ msix: { vectors: 4, bar: 3, tableOffset: 0, pbaOffset: 0x800 } }, /not a declared/);
  bad({ msix: { vectors: 4, bar: 2, tableOffset: 4, pbaOffset: 0x800 } }, /aligned/);
  bad({ msix: { vectors: 4, bar: 2, tableOffset: 0, pbaOffset: 0x1000 } }, /does not fit/);
  bad({ msix: { vectors: 4, bar: 2, tableOffset: 0, pbaOffset: 0x30 } }, /overlap/);
  bad({ identity: { ...base.identity, vendorId: 0xffff } }, /vendorId/);
  bad({ identity: { ...base.identity, classCode: 1 << 24 } }, /24 bits/);
});
