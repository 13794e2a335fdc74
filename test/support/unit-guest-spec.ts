import type { GuestSpec } from "../../qemu/launch/cmdline.ts";

export const GUEST_KEY =
  "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDrF+ZKOCCa+hUQgpY2///T01U0IPRWXX1Gughy8aC+f hil@test";

/** A TCG guest with an SSH NIC, 1 GiB and two firmware dirs; `over` changes what a test looks at. */
export function guestSpec(over: Partial<GuestSpec> = {}): GuestSpec {
  return {
    accel: "tcg",
    memoryMiB: 1024,
    cpus: 2,
    kernel: "/k/bzImage",
    initrd: "/k/initramfs.cpio.gz",
    authorizedKey: GUEST_KEY,
    loglevel: 7,
    consoleLog: "/run/x/console.log",
    qmpSocket: "/run/x/qmp.sock",
    network: { sshPort: 40022, mac: "52:54:00:12:34:56" },
    firmwareDirs: ["/usr/share/qemu", "/usr/share/seabios"],
    ...over,
  };
}

/** The value after every occurrence of `flag` in a QEMU argv. */
export function argsOf(argv: readonly string[], flag: string): string[] {
  return argv.flatMap((a, i) => (a === flag ? [argv[i + 1] ?? ""] : []));
}
