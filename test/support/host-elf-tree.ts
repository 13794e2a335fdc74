import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Test } from "tap";

const HOST_LIBS = "/lib/x86_64-linux-gnu";

/**
 * A temp tree holding the host's /usr/bin/true, its libc and loader (reached through an absolute
 * /lib64 link, as Debian's images have it) and `extraLibs` copied from the host's library dir;
 * removed when `t` ends.
 */
export function hostElfTree(t: Test, extraLibs: readonly string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), "hil-elf-tree-test-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const place = (treePath: string, from: string) => {
    mkdirSync(join(root, dirname(treePath)), { recursive: true });
    copyFileSync(from, join(root, treePath));
  };
  place("/usr/bin/true", "/usr/bin/true");
  for (const name of ["libc.so.6", "ld-linux-x86-64.so.2", ...extraLibs]) {
    place(`${HOST_LIBS}/${name}`, `${HOST_LIBS}/${name}`);
  }
  mkdirSync(join(root, "lib64"));
  symlinkSync(`${HOST_LIBS}/ld-linux-x86-64.so.2`, join(root, "lib64/ld-linux-x86-64.so.2"));
  return root;
}
