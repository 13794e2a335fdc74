/**
 * The client's queries about the device (spec "VFIO_USER_DEVICE_GET_INFO",
 * "VFIO_USER_DEVICE_GET_REGION_INFO", "VFIO_USER_DEVICE_GET_IRQ_INFO"): each request checked, and
 * its reply.
 */
import type { Interrupts } from "./irqs.ts";
import {
  DEVICE_INFO_SIZE,
  decodeDeviceInfo,
  decodeIrqInfo,
  decodeRegionInfo,
  Errno,
  encodeDeviceInfo,
  encodeIrqInfo,
  encodeRegionInfo,
  encodeReply,
  fail,
  type Header,
  IRQ_INFO_SIZE,
  REGION_INFO_SIZE,
  Vfio,
} from "./protocol.ts";
import { type DeviceRegions, NUM_REGIONS } from "./regions.ts";

/** DEVICE_GET_INFO: a PCI device that can be reset, with the server's regions and IRQ indexes. */
export function deviceInfoReply(h: Header, payload: Buffer): Buffer {
  const req = decodeDeviceInfo(payload);
  if (req.argsz < DEVICE_INFO_SIZE)
    fail(Errno.EINVAL, `DEVICE_GET_INFO: argsz ${req.argsz} < ${DEVICE_INFO_SIZE}`);
  return encodeReply(
    h,
    encodeDeviceInfo({
      argsz: DEVICE_INFO_SIZE,
      flags: Vfio.DEVICE_FLAGS_RESET | Vfio.DEVICE_FLAGS_PCI,
      numRegions: NUM_REGIONS,
      numIrqs: Vfio.PCI_NUM_IRQS,
    }),
  );
}

/** DEVICE_GET_REGION_INFO: a region's size and access; a region the device lacks has size 0. */
export function regionInfoReply(h: Header, payload: Buffer, regions: DeviceRegions): Buffer {
  const req = decodeRegionInfo(payload);
  if (req.argsz < REGION_INFO_SIZE)
    fail(Errno.EINVAL, `DEVICE_GET_REGION_INFO: argsz ${req.argsz} < ${REGION_INFO_SIZE}`);
  if (req.index >= NUM_REGIONS)
    fail(Errno.EINVAL, `DEVICE_GET_REGION_INFO: region ${req.index} out of range`);
  const size = regions.size(req.index);
  const flags = size > 0 ? Vfio.REGION_INFO_FLAG_READ | Vfio.REGION_INFO_FLAG_WRITE : 0;
  return encodeReply(
    h,
    encodeRegionInfo({
      argsz: REGION_INFO_SIZE,
      flags,
      index: req.index,
      capOffset: 0,
      size: BigInt(size),
      offset: 0n,
    }),
  );
}

/** DEVICE_GET_IRQ_INFO: an IRQ index's flags and count. */
export function irqInfoReply(h: Header, payload: Buffer, irqs: Interrupts): Buffer {
  const req = decodeIrqInfo(payload);
  if (req.argsz < IRQ_INFO_SIZE)
    fail(Errno.EINVAL, `DEVICE_GET_IRQ_INFO: argsz ${req.argsz} < ${IRQ_INFO_SIZE}`);
  if (req.index >= Vfio.PCI_NUM_IRQS)
    fail(Errno.EINVAL, `DEVICE_GET_IRQ_INFO: IRQ index ${req.index} out of range`);
  const info = irqs.info(req.index);
  return encodeReply(
    h,
    encodeIrqInfo({ argsz: IRQ_INFO_SIZE, flags: info.flags, index: req.index, count: info.count }),
  );
}
