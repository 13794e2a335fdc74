// Message encode/decode against byte vectors written by hand from QEMU's docs/interop/vfio-user.rst
// (section names in the test names) and, for DMA_READ/WRITE, from QEMU 10.2's client layout.
import t, { type Test } from "tap";
import {
  Command,
  DMA_RW_DATA,
  decodeDeviceInfo,
  decodeDmaMap,
  decodeDmaRw,
  decodeDmaUnmap,
  decodeHeader,
  decodeIrqInfo,
  decodeIrqSet,
  decodeRegionAccess,
  decodeRegionInfo,
  decodeVersion,
  decodeWriteMulti,
  Errno,
  encodeDeviceInfo,
  encodeDmaMap,
  encodeDmaRw,
  encodeDmaUnmap,
  encodeErrorReply,
  encodeIrqInfo,
  encodeIrqSet,
  encodeMessage,
  encodeRegionAccess,
  encodeRegionInfo,
  encodeReply,
  encodeVersion,
  encodeWriteMulti,
  Flags,
  ProtocolError,
  Vfio,
} from "../../qemu/vfio-user/protocol.ts";

/** Bytes from a hex string with spaces/newlines for readability. */
function hex(s: string): Buffer {
  return Buffer.from(s.replace(/\s+/g, ""), "hex");
}

function throwsErrno(t: Test, fn: () => unknown, errno: number, what: string): void {
  try {
    fn();
    t.fail(`${what}: did not throw`);
  } catch (err) {
    t.ok(err instanceof ProtocolError, `${what}: ProtocolError`);
    t.equal((err as ProtocolError).errno, errno, `${what}: errno`);
  }
}

t.test("Header: id, command, size, flags, error at offsets 0, 2, 4, 8, 12", async (t) => {
  const msg = encodeMessage({ id: 0x1234, command: Command.DEVICE_RESET, flags: Flags.NO_REPLY, error: 0 });
  t.same(msg, hex("3412 0d00 10000000 10000000 00000000"));
  t.same(decodeHeader(msg), { id: 0x1234, command: 13, size: 16, flags: 0x10, error: 0 });
  const bytes = hex("ffff 0100 14000000 21000000 16000000 deadbeef");
  t.same(decodeHeader(bytes), { id: 0xffff, command: 1, size: 20, flags: 0x21, error: 22 });
  throwsErrno(t, () => decodeHeader(hex("0100 0100 1000")), Errno.EINVAL, "short header");
});

t.test("Header: replies echo id and command; an error reply is the header alone", async (t) => {
  const req = { id: 7, command: Command.REGION_READ, size: 32, flags: 0, error: 0 };
  t.same(encodeReply(req, hex("aabb")), hex("0700 0900 12000000 01000000 00000000 aabb"));
  t.same(encodeErrorReply(req, Errno.EINVAL), hex("0700 0900 10000000 21000000 16000000"));
});

t.test("VERSION: major, minor, NUL-terminated JSON", async (t) => {
  const json = '{"capabilities":{"max_msg_fds":8}}';
  const payload = encodeVersion(0, 0, json);
  t.same(payload, Buffer.concat([hex("0000 0000"), Buffer.from(json), hex("00")]));
  const v = decodeVersion(payload);
  t.equal(v.major, 0);
  t.equal(v.minor, 0);
  t.same(v.capabilities, { max_msg_fds: 8 });
  t.same(decodeVersion(hex("0100 0200")), { major: 1, minor: 2, capabilities: undefined, json: undefined });
  throwsErrno(t, () => decodeVersion(hex("0000")), Errno.EINVAL, "shorter than major+minor");
  throwsErrno(
    t,
    () => decodeVersion(Buffer.concat([hex("00000000"), Buffer.from("{}")])),
    Errno.EINVAL,
    "no NUL",
  );
  throwsErrno(
    t,
    () => decodeVersion(Buffer.concat([hex("00000000"), Buffer.from("{}\0x\0")])),
    Errno.EINVAL,
    "NUL in the middle",
  );
  // JSON the decoder refuses: [what, JSON]
  const badJson: [string, string][] = [
    ["not JSON", "{nope"],
    ["not an object", "[1]"],
    ["caps not object", '{"capabilities":3}'],
    ["negative max_msg_fds", '{"capabilities":{"max_msg_fds":-1}}'],
    ["string max_data_xfer_size", '{"capabilities":{"max_data_xfer_size":"big"}}'],
    ["fd_index in a request", '{"capabilities":{"twin_socket":{"fd_index":0}}}'],
  ];
  for (const [what, json] of badJson)
    throwsErrno(t, () => decodeVersion(encodeVersion(0, 0, json)), Errno.EINVAL, what);
  // Unknown capabilities are tolerated (forward compatibility).
  t.same(decodeVersion(encodeVersion(0, 0, '{"capabilities":{"future":1}}')).capabilities, { future: 1 });
});

t.test("DMA_MAP: argsz, flags, offset, address, size (32 bytes)", async (t) => {
  const bytes = hex(`
    20000000 03000000
    0000100000000000
    0000000001000000
    0000002000000000`);
  t.same(
    encodeDmaMap({
      flags: Vfio.DMA_MAP_FLAG_READ | Vfio.DMA_MAP_FLAG_WRITE,
      offset: 0x100000n,
      address: 0x1_0000_0000n,
      size: 0x2000_0000n,
    }),
    bytes,
  );
  t.same(decodeDmaMap(bytes), {
    argsz: 32,
    flags: 3,
    offset: 0x100000n,
    address: 0x1_0000_0000n,
    size: 0x2000_0000n,
  });
  throwsErrno(t, () => decodeDmaMap(bytes.subarray(0, 31)), Errno.EINVAL, "31 bytes");
  throwsErrno(t, () => decodeDmaMap(Buffer.concat([bytes, hex("00")])), Errno.EINVAL, "33 bytes");
});

t.test("DMA_UNMAP: argsz, flags, address, size (24 bytes)", async (t) => {
  const bytes = hex("18000000 02000000 0000000000000000 0000000000000000");
  t.same(encodeDmaUnmap({ flags: Vfio.DMA_UNMAP_FLAG_ALL, address: 0n, size: 0n }), bytes);
  t.same(decodeDmaUnmap(hex("18000000 00000000 00e0000000000000 0010000000000000")), {
    argsz: 24,
    flags: 0,
    address: 0xe000n,
    size: 0x1000n,
  });
  throwsErrno(t, () => decodeDmaUnmap(bytes.subarray(0, 20)), Errno.EINVAL, "20 bytes");
});

t.test("DEVICE_GET_INFO: argsz, flags, num_regions, num_irqs", async (t) => {
  const bytes = hex("10000000 03000000 09000000 05000000");
  t.same(encodeDeviceInfo({ argsz: 16, flags: 3, numRegions: 9, numIrqs: 5 }), bytes);
  t.same(decodeDeviceInfo(bytes), { argsz: 16, flags: 3, numRegions: 9, numIrqs: 5 });
});

t.test("DEVICE_GET_REGION_INFO: argsz, flags, index, cap_offset, size, offset", async (t) => {
  const bytes = hex("20000000 03000000 07000000 00000000 0010000000000000 0000000000000000");
  const info = { argsz: 32, flags: 3, index: 7, capOffset: 0, size: 4096n, offset: 0n };
  t.same(encodeRegionInfo(info), bytes);
  t.same(decodeRegionInfo(bytes), info);
  throwsErrno(t, () => decodeRegionInfo(bytes.subarray(0, 12)), Errno.EINVAL, "12 bytes");
});

t.test("DEVICE_GET_IRQ_INFO: argsz, flags, index, count", async (t) => {
  const bytes = hex("10000000 09000000 02000000 04000000");
  const info = { argsz: 16, flags: Vfio.IRQ_INFO_EVENTFD | Vfio.IRQ_INFO_NORESIZE, index: 2, count: 4 };
  t.same(encodeIrqInfo(info), bytes);
  t.same(decodeIrqInfo(bytes), info);
});

t.test("DEVICE_SET_IRQS: argsz, flags, index, start, count, data", async (t) => {
  const eventfds = hex("14000000 24000000 02000000 00000000 04000000");
  t.same(
    encodeIrqSet({
      flags: Vfio.IRQ_SET_DATA_EVENTFD | Vfio.IRQ_SET_ACTION_TRIGGER,
      index: 2,
      start: 0,
      count: 4,
    }),
    eventfds,
  );
  const bools = hex("17000000 22000000 02000000 01000000 03000000 010001");
  const s = decodeIrqSet(bools);
  t.equal(s.argsz, 23);
  t.equal(s.flags, Vfio.IRQ_SET_DATA_BOOL | Vfio.IRQ_SET_ACTION_TRIGGER);
  t.same([s.index, s.start, s.count], [2, 1, 3]);
  t.same(Buffer.from(s.data), hex("010001"));
  throwsErrno(t, () => decodeIrqSet(eventfds.subarray(0, 16)), Errno.EINVAL, "16 bytes");
});

t.test("REGION_READ/WRITE: offset u64, region u32, count u32, data", async (t) => {
  const write = hex("2800000000000000 00000000 04000000 efbeadde");
  t.same(encodeRegionAccess({ offset: 0x28n, region: 0, count: 4, data: hex("efbeadde") }), write);
  const a = decodeRegionAccess(write, "REGION_WRITE");
  t.same([a.offset, a.region, a.count], [0x28n, 0, 4]);
  t.same(Buffer.from(a.data), hex("efbeadde"));
  const read = hex("0400000000000000 07000000 02000000");
  t.same(encodeRegionAccess({ offset: 4n, region: 7, count: 2 }), read);
  t.equal(decodeRegionAccess(read, "REGION_READ").data.length, 0);
});

t.test("REGION_WRITE_MULTI: wr_cnt u64, then 24-byte writes with 8 data bytes", async (t) => {
  const bytes = hex(`
    0200000000000000
    0400000000000000 00000000 04000000 7856341200000000
    2800000000000000 00000000 01000000 0100000000000000`);
  t.same(
    encodeWriteMulti([
      { offset: 4n, region: 0, data: hex("78563412") },
      { offset: 0x28n, region: 0, data: hex("01") },
    ]),
    bytes,
  );
  const w = decodeWriteMulti(bytes);
  t.equal(w.length, 2);
  t.same([w[1]?.offset, w[1]?.count, Buffer.from(w[1]?.data ?? [])], [0x28n, 1, hex("01")]);
  throwsErrno(t, () => decodeWriteMulti(hex("0000000000000000")), Errno.EINVAL, "wr_cnt 0");
  throwsErrno(t, () => decodeWriteMulti(bytes.subarray(0, 40)), Errno.EINVAL, "truncated");
  const bad = Buffer.from(bytes);
  bad.writeUInt32LE(9, 8 + 12);
  throwsErrno(t, () => decodeWriteMulti(bad), Errno.EINVAL, "count 9");
});

t.test("DMA_READ/WRITE use QEMU 10.2's layout: u32 count at 24, data at 28, size 32 + count", async (t) => {
  // DMA_READ request: header, address, count, 4 pad bytes.
  const req = encodeMessage(
    { id: 5, command: Command.DMA_READ, flags: 0, error: 0 },
    encodeDmaRw(0x1000n, 3),
  );
  t.same(req, hex("0500 0b00 20000000 00000000 00000000 0010000000000000 03000000 00000000"));
  // DMA_WRITE request: data right after count; the message is 32 + count bytes.
  const wr = encodeMessage(
    { id: 6, command: Command.DMA_WRITE, flags: 0, error: 0 },
    encodeDmaRw(0x2000n, 3, hex("aabbcc")),
  );
  t.equal(wr.length, 32 + 3);
  t.same(wr.subarray(24), hex("03000000 aabbcc 000000 00"));
  t.equal(wr.indexOf(hex("aabbcc")), 28);
  // A DMA_READ reply as QEMU builds it (size = 32 + count, data at 28).
  const r = decodeDmaRw(
    Buffer.concat([hex("0030000000000000 03000000"), hex("112233"), hex("00000000")]),
    true,
  );
  t.same([r.address, r.count, Buffer.from(r.data)], [0x3000n, 3, hex("112233")]);
  t.equal(DMA_RW_DATA, 12);
  throwsErrno(
    t,
    () => decodeDmaRw(Buffer.concat([hex("0030000000000000 08000000"), hex("1122334455")]), true),
    Errno.EINVAL,
    "count beyond data",
  );
});
