import { existsSync } from "node:fs";

/**
 * Firmware from the host's Debian packages: QEMU's own ROMs (kvmvapic, linuxboot_dma) from
 * qemu-system-data, bios-256k.bin from seabios, efi-virtio.rom from ipxe-qemu (needed unless a
 * NIC gets `romfile=`). Our build installs no blobs, so these are passed with -L.
 */
export const HOST_FIRMWARE_DIRS = ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"] as const;

export const FIRMWARE_PACKAGES = ["qemu-system-data", "seabios", "ipxe-qemu"] as const;

export function hostFirmwareDirs(): string[] {
  return HOST_FIRMWARE_DIRS.filter((d) => existsSync(d));
}
