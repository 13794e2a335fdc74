import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { type ElfDynamicInfo, findUnresolved, verifyElfClosure } from "../../harness/image/elf.ts";
import { resolveInTree } from "../../harness/image/tree.ts";
import { hostElfTree } from "../support/host-elf-tree.ts";

const DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"];

/** A tree holding the host's /bin/true and what it needs (libc, the loader via an absolute link). */
function handMadeTree(t: Test): string {
  const root = hostElfTree(t);
  writeFileSync(join(root, "usr/bin/script"), "#!/bin/sh\necho not elf\n");
  return root;
}

t.test("a complete hand-made tree passes the DT_NEEDED check", async (t) => {
  const root = handMadeTree(t);
  const count = await verifyElfClosure(root, DIRS);
  t.equal(count, 3, "true, libc and the loader are ELF; the script is not");
});

t.test("a missing library is a HilError naming the binary and the library", async (t) => {
  const root = handMadeTree(t);
  rmSync(join(root, "lib/x86_64-linux-gnu/libc.so.6"));
  await t.rejects(verifyElfClosure(root, DIRS), {
    name: "HilError",
    message: /\/usr\/bin\/true needs libc\.so\.6/,
  });
});

t.test("a dangling interpreter link is reported", async (t) => {
  const root = handMadeTree(t);
  rmSync(join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
  await t.rejects(verifyElfClosure(root, DIRS), { message: /needs \/lib64\/ld-linux-x86-64\.so\.2/ });
});

t.test("findUnresolved honours $ORIGIN run paths and the library dirs", async (t) => {
  const present = new Set([
    "/opt/app/lib/libown.so.1",
    "/usr/lib/x86_64-linux-gnu/libz.so.1",
    "/lib64/ld.so",
  ]);
  const infos: ElfDynamicInfo[] = [
    {
      path: "/opt/app/bin/app",
      interpreter: "/lib64/ld.so",
      needed: ["libown.so.1", "libz.so.1", "libgone.so.3"],
      searchPath: ["$ORIGIN/../lib"],
    },
    { path: "/opt/app/lib/libown.so.1", needed: ["libz.so.1"], searchPath: [] },
  ];
  t.same(
    findUnresolved(infos, DIRS, (p) => present.has(p)),
    [{ binary: "/opt/app/bin/app", library: "libgone.so.3" }],
  );
});

t.test("resolveInTree follows relative and absolute links inside the tree", async (t) => {
  const root = handMadeTree(t);
  symlinkSync("../x86_64-linux-gnu/libc.so.6", join(root, "lib/x86_64-linux-gnu/libc-rel.so"));
  symlinkSync("loop-b", join(root, "lib/loop-a"));
  symlinkSync("loop-a", join(root, "lib/loop-b"));
  t.equal(
    resolveInTree(root, "/lib64/ld-linux-x86-64.so.2"),
    join(root, "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
  );
  t.equal(
    resolveInTree(root, "/lib/x86_64-linux-gnu/libc-rel.so"),
    join(root, "lib/x86_64-linux-gnu/libc.so.6"),
  );
  t.equal(resolveInTree(root, "/lib/loop-a"), undefined);
  t.equal(resolveInTree(root, "/nope"), undefined);
});
