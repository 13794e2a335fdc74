import { join } from "node:path";
import t from "tap";
import {
  readModuleMap,
  recordTarget,
  sameNamedHeaders,
  targetsUsing,
} from "../../harness/kernel/build-record.ts";

/** .cmd records as Kbuild 6.x writes them in an O= build: sources as absolute paths under `src`. */
function cmdRecord(src: string, target: string, source: string, deps: string[]): string {
  return [
    `savedcmd_${target} := gcc -Wp,-MMD,x.d -I${src}/include -fmacro-prefix-map=${src}/= -c -o ${target} ${src}/${source}`,
    "",
    `source_${target} := ${src}/${source}`,
    "",
    `deps_${target} := \\`,
    "    $(wildcard include/config/INFINIBAND_ERDMA) \\",
    ...deps.map((d) => `  ${src}/${d} \\`),
    "",
    `${target}: $(deps_${target})`,
    "",
    `$(deps_${target}):`,
    "",
  ].join("\n");
}

t.test("record files name their targets", async (t) => {
  t.equal(
    recordTarget("drivers/infiniband/hw/erdma/.erdma_main.o.cmd"),
    "drivers/infiniband/hw/erdma/erdma_main.o",
  );
  t.equal(recordTarget(".vmlinux.cmd"), "vmlinux");
  t.equal(recordTarget("usr/.initramfs_data.cpio.d"), "usr/initramfs_data.cpio");
  t.equal(recordTarget("include/config/auto.conf.cmd"), "include/config/auto.conf");
});

t.test("the targets that use a source file, and the modules targets belong to", async (t) => {
  const root = t.testdir({});
  const src = join(root, "kernel-base", "k1", "src");
  const erdma = "drivers/infiniband/hw/erdma";
  const dir = t.testdir({
    build: {
      "modules.order": `${erdma}/erdma.o\ndrivers/infiniband/sw/siw/siw.o\n`,
      init: { ".main.o.cmd": cmdRecord(src, "init/main.o", "init/main.c", ["include/linux/module.h"]) },
      drivers: {
        infiniband: {
          hw: {
            erdma: {
              "erdma.mod": `${erdma}/erdma_main.o\n${erdma}/erdma_qp.o\n`,
              ".erdma_main.o.cmd": cmdRecord(src, `${erdma}/erdma_main.o`, `${erdma}/erdma_main.c`, [
                `${erdma}/erdma_hw.h`,
                "include/linux/module.h",
                "include/asm-generic/rwonce.h",
              ]),
              ".erdma_qp.o.cmd": cmdRecord(src, `${erdma}/erdma_qp.o`, `${erdma}/erdma_qp.c`, [
                `${erdma}/erdma_hw.h`,
              ]),
              ".erdma_eq.o.cmd": cmdRecord(src, `${erdma}/erdma_eq.o`, `${erdma}/erdma_eq.c`, [
                `${erdma}/erdma_hw.h.orig`,
              ]),
            },
          },
          sw: {
            siw: { "siw.mod": "drivers/infiniband/sw/siw/siw_main.o drivers/infiniband/sw/siw/siw_qp.o\n" },
          },
        },
      },
      ".missing-syscalls.d": `missing-syscalls: ${src}/arch/x86/include/asm/unistd.h\n`,
    },
  });
  const build = join(dir, "build");
  const used = await targetsUsing(build, src, [
    `${erdma}/erdma_hw.h`,
    `${erdma}/erdma_main.c`,
    "include/linux/module.h",
    "arch/x86/include/asm/unistd.h",
    "include/linux/unused.h",
  ]);
  t.same(Object.fromEntries(used), {
    [`${erdma}/erdma_hw.h`]: [`${erdma}/erdma_main.o`, `${erdma}/erdma_qp.o`], // not erdma_eq.o (erdma_hw.h.orig)
    [`${erdma}/erdma_main.c`]: [`${erdma}/erdma_main.o`],
    "include/linux/module.h": [`${erdma}/erdma_main.o`, "init/main.o"],
    "arch/x86/include/asm/unistd.h": ["missing-syscalls"],
    "include/linux/unused.h": [],
  });
  const named = await sameNamedHeaders(build, src, ["arch/x86/include/asm/rwonce.h", `${erdma}/erdma_new.h`]);
  t.same(Object.fromEntries(named), {
    "arch/x86/include/asm/rwonce.h": ["include/asm-generic/rwonce.h"],
    [`${erdma}/erdma_new.h`]: [],
  });
  const modules = readModuleMap(build);
  t.equal(modules.get(`${erdma}/erdma_qp.o`), `${erdma}/erdma.ko`);
  t.equal(modules.get(`${erdma}/erdma.mod.o`), `${erdma}/erdma.ko`);
  t.equal(modules.get("drivers/infiniband/sw/siw/siw_qp.o"), "drivers/infiniband/sw/siw/siw.ko");
  t.equal(modules.get("init/main.o"), undefined);
});

t.test("a build tree without its module records is an error naming it", async (t) => {
  const dir = t.testdir({ none: {}, nomod: { "modules.order": "drivers/x/x.o\n" } });
  t.throws(() => readModuleMap(join(dir, "none")), { message: "the base build has no modules.order" });
  t.throws(() => readModuleMap(join(dir, "nomod")), {
    message: "the base build has no drivers/x/x.mod",
    where: join(dir, "nomod"),
  });
});
