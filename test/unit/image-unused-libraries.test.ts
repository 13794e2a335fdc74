import { existsSync, lstatSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import type { ElfDynamicInfo } from "../../harness/image/elf.ts";
import { verifyElfClosure } from "../../harness/image/elf.ts";
import { removeUnusedLibraries, unusedLibraries } from "../../harness/image/unused-libraries.ts";
import { hostElfTree } from "../support/host-elf-tree.ts";

const LIB = "/usr/lib/x86_64-linux-gnu";
const DIRS = ["/lib/x86_64-linux-gnu", LIB];

/** A tree's files as the pure function sees them: links named here resolve to their targets. */
function canonicalIn(files: readonly ElfDynamicInfo[], links: Record<string, string> = {}) {
  const present = new Set([...files.map((f) => f.path), ...DIRS]);
  return (p: string) => {
    const target = links[p] ?? p;
    return present.has(target) ? target : undefined;
  };
}

const lib = (name: string, needed: string[] = [], searchPath: string[] = []): ElfDynamicInfo => ({
  path: `${LIB}/${name}`,
  needed,
  searchPath,
});

t.test("a library no program needs, directly or through another library, is unused", async (t) => {
  const infos: ElfDynamicInfo[] = [
    { path: "/usr/bin/app", interpreter: "/lib64/ld.so", needed: ["liba.so.1"], searchPath: [] },
    { path: "/lib/x86_64-linux-gnu/ld.so", needed: [], searchPath: [] },
    lib("liba.so.1", ["libb.so.2"]),
    lib("libb.so.2"),
    lib("libunused.so.3", ["libb.so.2"]),
    lib("libcrypto.so.3"),
  ];
  const canonical = canonicalIn(infos, { "/lib64/ld.so": "/lib/x86_64-linux-gnu/ld.so" });
  t.same(unusedLibraries(infos, DIRS, canonical, [], []), [`${LIB}/libcrypto.so.3`, `${LIB}/libunused.so.3`]);
});

t.test(
  "plugins in subdirectories, links from elsewhere and dlopened names keep their libraries",
  async (t) => {
    const infos: ElfDynamicInfo[] = [
      { path: `${LIB}/libibverbs/liberdma-rdmav34.so`, needed: ["libibverbs.so.1"], searchPath: [] },
      lib("libibverbs.so.1"),
      lib("libmlx5.so.1.24.44.0", ["libibverbs.so.1"]),
      lib("libgcc_s.so.1"),
      lib("libmvec.so.1"),
    ];
    const canonical = canonicalIn(infos, {
      [`${LIB}/libibverbs/libmlx5-rdmav34.so`]: `${LIB}/libmlx5.so.1.24.44.0`,
    });
    t.same(
      unusedLibraries(infos, DIRS, canonical, [`${LIB}/libibverbs/libmlx5-rdmav34.so`], ["libgcc_s.so.1"]),
      [`${LIB}/libmvec.so.1`],
      "the plugin itself is never a candidate; what it and the linked provider need stays",
    );
  },
);

t.test("a run path with $ORIGIN is searched before the library dirs", async (t) => {
  const infos: ElfDynamicInfo[] = [
    { path: "/opt/app/bin/app", needed: ["libown.so.1"], searchPath: ["$ORIGIN/../../..", LIB] },
    { path: "/libown.so.1", needed: [], searchPath: [] },
    lib("libown.so.1"),
  ];
  t.same(
    unusedLibraries(infos, DIRS, canonicalIn(infos), [], []),
    [`${LIB}/libown.so.1`],
    "the copy the run path finds first is the one loaded",
  );
});

/** The host's /usr/bin/true with its libc and loader, libm unused behind a soname link, libz
 * reached only through a link from a plugin directory. */
function hostTree(t: Test): string {
  const root = hostElfTree(t, ["libm.so.6", "libz.so.1", "libgcc_s.so.1"]);
  symlinkSync("libm.so.6", join(root, "lib/x86_64-linux-gnu/libm.so"));
  mkdirSync(join(root, "usr/lib/x86_64-linux-gnu/plugins"), { recursive: true });
  symlinkSync(
    "../../../../lib/x86_64-linux-gnu/libz.so.1",
    join(root, "usr/lib/x86_64-linux-gnu/plugins/z.so"),
  );
  return root;
}

t.test(
  "removeUnusedLibraries deletes what nothing loads and the links to it; the rest resolves",
  async (t) => {
    const root = hostTree(t);
    const dirs = [...DIRS, "/lib64"];
    const removed = await removeUnusedLibraries(root, dirs, ["libgcc_s.so.1"]);
    t.same(removed, ["/lib/x86_64-linux-gnu/libm.so.6"]);
    t.notOk(existsSync(join(root, "lib/x86_64-linux-gnu/libm.so.6")));
    t.throws(
      () => lstatSync(join(root, "lib/x86_64-linux-gnu/libm.so")),
      { code: "ENOENT" },
      "its link went too",
    );
    for (const kept of ["libc.so.6", "ld-linux-x86-64.so.2", "libz.so.1", "libgcc_s.so.1"]) {
      t.ok(existsSync(join(root, "lib/x86_64-linux-gnu", kept)), `${kept} kept`);
    }
    t.ok(lstatSync(join(root, "lib64/ld-linux-x86-64.so.2")).isSymbolicLink(), "the loader's link kept");
    t.equal(await verifyElfClosure(root, dirs), 5, "every ELF file left still finds what it needs");
  },
);
