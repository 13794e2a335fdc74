/**
 * A patched kernel continues its base's cached build (harness/kernel/rebuild.ts). Real debian:6.12
 * builds: an erdma-only series rebuilds erdma.ko alone; a built-in change relinks the kernel after
 * compiling one object; both kernels boot and show their change; `--config ulp` compiles its
 * modules and no built-in object. That the modules are byte for byte those of a build from
 * scratch is checked in the nightly tier (test/nightly/kernel-from-scratch.test.ts): it compiles a
 * whole kernel again.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { prepareGuest, withGuest } from "../../harness/boot.ts";
import { kverbsModuleKey } from "../../harness/image/kverbs-module.ts";
import { buildKernel, KERNEL_CACHE_KIND } from "../../harness/kernel/build.ts";
import { KbuildCounter, parseKbuildLine } from "../../harness/kernel/kbuild-progress.ts";
import { sourceWrittenSince } from "../../harness/kernel/source-guard.ts";
import type { KernelArtifact } from "../../harness/kernel/types.ts";
import { run } from "../../util/exec.ts";
import { hashFile } from "../../util/hash.ts";
import { cacheNamesOf, kernelKeyOf } from "../support/kernel-keys.ts";

t.setTimeout(4 * 3600_000);

const BASE = "debian:6.12";
const ERDMA = "drivers/infiniband/hw/erdma";
const fixture = (name: string) => new URL(`../../fixtures/series/${name}`, import.meta.url).pathname;

function buildLog(a: KernelArtifact): string[] {
  return readFileSync(join(a.dir, "build.log"), "utf8").split("\n");
}

function steps(a: KernelArtifact): number {
  const c = new KbuildCounter();
  for (const line of buildLog(a)) c.feed(line);
  return c.steps;
}

/** The objects the build compiled (CC/AS of a .o), sorted. */
function compiled(a: KernelArtifact): string[] {
  return buildLog(a)
    .map(parseKbuildLine)
    .filter((s) => s?.isObject)
    .map((s) => s?.target ?? "")
    .sort();
}

/** What every link of the kernel compiles: the kallsyms tables, the version, the boot image. */
const LINK_OBJECTS = /^(\.tmp_vmlinux\d\.kallsyms\.o|init\/version(-timestamp)?\.o|arch\/x86\/boot\/.*\.o)$/;

function installed(a: KernelArtifact, rel: string): string {
  return join(a.modulesRoot, "lib", "modules", a.release, "kernel", rel);
}

const fileStarted = Date.now();
const base = await buildKernel({ base: BASE, configs: [] });
const baseSteps = steps(base);
const baseObjects = await Promise.all(
  ["erdma_main.o", "erdma_eq.o"].map((o) => hashFile(join(base.buildDir, ERDMA, o))),
);
t.comment(`base build: ${baseSteps} Kbuild steps`);

t.test("an erdma-only series rebuilds erdma.ko alone and keeps the base's kernel", async (t) => {
  const a = await buildKernel({ base: BASE, series: fixture("erdma-module-only.mbox"), configs: [] });
  t.same(a.rebuild && { mode: a.rebuild.mode, modules: a.rebuild.modules, baseKey: a.rebuild.baseKey }, {
    mode: "modules",
    modules: [`${ERDMA}/erdma.ko`],
    baseKey: base.key,
  });
  const objects = compiled(a);
  t.same(
    objects.filter((o) => !o.startsWith(`${ERDMA}/`)),
    [],
    `only erdma objects were compiled: ${objects.join(" ")}`,
  );
  for (const o of [
    "erdma_cm.o",
    "erdma_cmdq.o",
    "erdma_cq.o",
    "erdma_eq.o",
    "erdma_main.o",
    "erdma_qp.o",
    "erdma_verbs.o",
  ])
    t.ok(objects.includes(`${ERDMA}/${o}`), `${o} includes erdma.h and was compiled again`);
  t.ok(steps(a) * 20 < baseSteps, `${steps(a)} Kbuild steps, the base build ran ${baseSteps}`);
  t.equal(a.rebuild?.steps, steps(a), "the artifact records the steps");
  t.equal(
    a.rebuild?.moduleInterfaceOf,
    base.key,
    "the base's headers, .config and Module.symvers: its interface to out-of-tree modules",
  );
  t.equal(
    await kverbsModuleKey(a),
    await kverbsModuleKey(base),
    "so hil_kverbs.ko is the base's, not built again",
  );

  t.equal(await hashFile(a.bzImage), await hashFile(base.bzImage), "the base's bzImage");
  t.equal(
    await hashFile(installed(a, "drivers/infiniband/sw/siw/siw.ko")),
    await hashFile(installed(base, "drivers/infiniband/sw/siw/siw.ko")),
    "the base's other modules",
  );
  t.not(
    await hashFile(installed(a, `${ERDMA}/erdma.ko`)),
    await hashFile(installed(base, `${ERDMA}/erdma.ko`)),
    "a new erdma.ko",
  );
  const intree = await run("modinfo", "modinfo", ["-F", "intree", installed(a, `${ERDMA}/erdma.ko`)]);
  t.equal(intree.stdout.trim(), "Y", "built in-tree (an M= build would taint the kernel as out-of-tree)");
  t.ok(readFileSync(join(a.srcDir, ERDMA, "erdma.h"), "utf8").includes("ERDMA_IRQNAME_SIZE 16"));
  t.same(
    await Promise.all(["erdma_main.o", "erdma_eq.o"].map((o) => hashFile(join(base.buildDir, ERDMA, o)))),
    baseObjects,
    "the base build's objects are untouched",
  );
  t.notOk(
    readFileSync(join(base.srcDir, ERDMA, "erdma.h"), "utf8").includes("ERDMA_IRQNAME_SIZE 16"),
    "and so is its source tree",
  );
});

t.test("the guest runs the rebuilt erdma: its message, its interrupt names, no taint", async (t) => {
  const prepared = await prepareGuest({ base: BASE, series: fixture("erdma-module-only.mbox"), configs: [] });
  await withGuest(prepared, { memoryMiB: 512 }, async (g) => {
    const dmesg = await g.exec("dmesg");
    t.match(dmesg.stdout, /erdma-hil: erdma rebuilt from a patched tree/, "the printk of erdma_main.c");
    const irqs = (await g.exec("cat /proc/interrupts")).stdout;
    t.match(irqs, /erdma-common@pc\s*$/m, "erdma_main.c names the common interrupt with 15 characters");
    t.match(irqs, /erdma-ceq0@pci:\s*$/m, "and so does erdma_eq.c its completion queues");
    t.notMatch(irqs, /erdma-common@pci:/, "no name of the base's length");
    const devinfo = await g.exec("ibv_devinfo");
    t.match(devinfo.stdout, /hca_id:\s+erdma_0/, "the driver probed the device");
    t.equal((await g.exec("cat /proc/sys/kernel/tainted")).stdout.trim(), "0", "the kernel is not tainted");
  });
});

t.test("a built-in change compiles its object, relinks the kernel, and boots", async (t) => {
  const HELLO = "erdma-hil: hello from a patched kernel";
  const a = await buildKernel({ base: BASE, series: fixture("hello-printk.mbox"), configs: [] });
  t.equal(a.rebuild?.mode, "incremental");
  t.match(a.rebuild?.reason, /init\/main\.c reaches built-in init\/main\.o/);
  t.equal(a.rebuild?.moduleInterfaceOf, undefined, "a relinked kernel has its own module interface");
  t.not(await kverbsModuleKey(a), await kverbsModuleKey(base), "and its own hil_kverbs.ko");
  const objects = compiled(a);
  t.ok(objects.includes("init/main.o"), "init/main.o compiled again");
  t.same(
    objects.filter((o) => o !== "init/main.o" && !LINK_OBJECTS.test(o)),
    [],
    `nothing else but what the link makes: ${objects.join(" ")}`,
  );
  t.match(buildLog(a).join("\n"), /^ {2}LD\s+vmlinux/m, "vmlinux relinked");
  t.ok(steps(a) * 10 < baseSteps, `${steps(a)} Kbuild steps, the base build ran ${baseSteps}`);
  t.ok(readFileSync(join(a.buildDir, "vmlinux")).includes(Buffer.from(HELLO)), "vmlinux carries the line");
  t.not(await hashFile(a.bzImage), await hashFile(base.bzImage), "a new bzImage");
  const prepared = await prepareGuest({ base: BASE, series: fixture("hello-printk.mbox"), configs: [] });
  await withGuest(prepared, { device: false }, async (g) => {
    t.match(g.consoleLog(), HELLO, "the guest's console shows it");
    t.equal((await g.exec("uname -r")).stdout.trim(), a.release);
  });
});

// `--config ulp` adds modules only (guest/kconfig/ulp.config): whatever its modules select that a
// header of the whole kernel reads must be in base.config already, or every object including that
// header is compiled again (SG_POOL and SGL_ALLOC of scatterlist.h made 516 objects again).
t.test("a fragment of modules (ulp) compiles its modules' objects and no built-in one", async (t) => {
  const a = await buildKernel({ base: BASE, configs: ["ulp"] });
  t.equal(a.rebuild?.mode, "incremental");
  const ulpDirs = /^drivers\/(nvme\/(host|target)|block\/(null_blk|rnbd)|infiniband\/ulp\/rtrs)\//;
  const objects = compiled(a);
  t.ok(objects.length > 0, "the modules' objects compiled");
  t.same(
    objects.filter((o) => !ulpDirs.test(o) && !LINK_OBJECTS.test(o)),
    [],
    `only objects of the ULP modules and of the kernel's link: ${objects.length} compiled`,
  );
  t.ok(steps(a) * 5 < baseSteps, `${steps(a)} Kbuild steps, the base build ran ${baseSteps}`);
});

t.test("a series that breaks the erdma build: one error naming the file; nothing cached", async (t) => {
  const dir = t.testdir({});
  const broken = join(dir, "broken.mbox");
  writeFileSync(
    broken,
    readFileSync(fixture("erdma-module-only.mbox"), "utf8").replace(
      '+\tpr_info("erdma-hil: erdma rebuilt from a patched tree\\n");',
      "+\terdma_hil_no_such_function();",
    ),
  );
  const key = await kernelKeyOf(BASE, { series: broken });
  t.same(cacheNamesOf(KERNEL_CACHE_KIND, key), [], "no entry of this series before");
  const err = await buildKernel({ base: BASE, series: broken, configs: [] }).then(
    () => undefined,
    (e: unknown) => e as Error & { detail?: string },
  );
  t.match(
    err?.message,
    /^rebuilding erdma\.ko of Linux 6\.12\.\d+ \+ 2 patch\(es\) from its base build failed$/,
  );
  t.match(
    err?.detail,
    /^drivers\/infiniband\/hw\/erdma\/erdma_main\.c:\d+:\d+: error: implicit declaration of function .erdma_hil_no_such_function./m,
    "the compiler's error, the file named relative to the tree",
  );
  t.same(cacheNamesOf(KERNEL_CACHE_KIND, key), [], "no kernel entry, lock or work dir of this build left");
  t.ok(existsSync(base.buildDir), "the base build is still there");
});

// Every patched tree above is a hard-linked copy of the base's source (apply.ts); a build that
// wrote into one of its shared files would have written into the base tree too.
t.test("no build of this file wrote into the base's cached source tree", async (t) => {
  t.same(
    await sourceWrittenSince(base.srcDir, fileStarted),
    [],
    "no file of the base tree is newer than this file's start",
  );
});
