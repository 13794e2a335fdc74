/** QEMU version strings, as printed by `qemu-system-x86_64 --version`. */

export type Version = readonly [major: number, minor: number, micro: number];

/** "QEMU emulator version 10.2.2 (Debian 1:10.2.2+ds-1)" -> "10.2.2"; undefined if there is none. */
export function parseQemuVersionOutput(output: string): string | undefined {
  const m = /QEMU emulator version (\d+\.\d+(?:\.\d+)?)/.exec(output);
  return m?.[1];
}

export function parseVersion(text: string): Version | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

export function compareVersions(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** True when `version` parses and is at least `minimum`. */
export function isAtLeast(version: string, minimum: string): boolean {
  const v = parseVersion(version);
  const min = parseVersion(minimum);
  if (!v || !min) return false;
  return compareVersions(v, min) >= 0;
}
