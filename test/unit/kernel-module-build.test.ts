import { readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  moduleTargets,
  restoreModuleRecords,
  saveModuleRecords,
  symversInModuleOrder,
} from "../../harness/kernel/module-build.ts";

const ORDER =
  "crypto/crypto.o\ndrivers/infiniband/core/ib_core.o\ndrivers/infiniband/core/ib_cm.o\nlib/libcrc32c.o\n";
const line = (sym: string, mod: string) => `0x00000000\t${sym}\t${mod}\tEXPORT_SYMBOL\t\n`;
/** Module.symvers as a whole build writes it: vmlinux, then the modules in modules.order's order. */
const WHOLE =
  line("printk", "vmlinux") +
  line("kmalloc", "vmlinux") +
  line("crypto_alloc", "crypto/crypto") +
  line("ib_register_device", "drivers/infiniband/core/ib_core") +
  line("ib_alloc_pd", "drivers/infiniband/core/ib_core") +
  line("ib_create_cm_id", "drivers/infiniband/core/ib_cm") +
  line("crc32c", "lib/libcrc32c");
/** ...and as a single-target build of the same modules writes it: modules in sorted order. */
const SINGLE =
  line("printk", "vmlinux") +
  line("kmalloc", "vmlinux") +
  line("crypto_alloc", "crypto/crypto") +
  line("ib_create_cm_id", "drivers/infiniband/core/ib_cm") +
  line("ib_register_device", "drivers/infiniband/core/ib_core") +
  line("ib_alloc_pd", "drivers/infiniband/core/ib_core") +
  line("crc32c", "lib/libcrc32c");

t.test("every module of modules.order is a target", async (t) => {
  t.same(moduleTargets(ORDER), [
    "crypto/crypto.ko",
    "drivers/infiniband/core/ib_core.ko",
    "drivers/infiniband/core/ib_cm.ko",
    "lib/libcrc32c.ko",
  ]);
  t.same(moduleTargets("kernel/a.ko\n\n"), ["kernel/a.ko"], "6.1 lists .ko files");
});

t.test("Module.symvers goes back to a whole build's order", async (t) => {
  t.equal(symversInModuleOrder(SINGLE, ORDER), WHOLE);
  t.equal(symversInModuleOrder(WHOLE, ORDER), WHOLE, "an ordered file stays as it is");
  const extra = line("new_export", "drivers/x/new");
  t.equal(symversInModuleOrder(extra + SINGLE, ORDER), WHOLE + extra, "a module it does not know goes last");
});

t.test("modules.order comes back with its time stamp; Module.symvers is reordered", async (t) => {
  const dir = t.testdir({ "modules.order": ORDER, "Module.symvers": WHOLE });
  const old = new Date("2024-01-01T00:00:00Z");
  utimesSync(join(dir, "modules.order"), old, old);
  const saved = await saveModuleRecords(dir);
  // what the single-target build leaves
  rmSync(join(dir, "modules.order"));
  writeFileSync(join(dir, "Module.symvers"), SINGLE);
  await restoreModuleRecords(dir, saved);
  t.equal(readFileSync(join(dir, "modules.order"), "utf8"), ORDER);
  t.equal(statSync(join(dir, "modules.order")).mtimeMs, old.getTime());
  t.equal(readFileSync(join(dir, "Module.symvers"), "utf8"), WHOLE);
  await t.rejects(saveModuleRecords(t.testdir({})), { message: "the base build has no modules.order" });
});
