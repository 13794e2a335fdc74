/** Device names from `qemu-system-x86_64 -device help`, whose lines read `name "virtio-net-pci", bus PCI, ...`. */
export function parseDeviceNames(helpOutput: string): Set<string> {
  const names = new Set<string>();
  for (const m of helpOutput.matchAll(/^name "([^"]+)"/gm)) {
    if (m[1]) names.add(m[1]);
  }
  return names;
}
