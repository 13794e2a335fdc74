// When a patched kernel's guest modules are its base's: a module-only rebuild whose changes stay out
// of the includable headers and whose Module.symvers is the base's shares the base's interface
// (transitively); anything else has its own.
import t from "tap";
import { moduleInterfaceKey, sharedModuleInterface } from "../../harness/kernel/module-interface.ts";
import type { RebuildPlan } from "../../harness/kernel/rebuild-plan.ts";
import type { TreeChange } from "../../harness/kernel/tree-diff.ts";

const base = { key: "base-key" };
const modules: RebuildPlan = { mode: "modules", modules: ["drivers/infiniband/sw/siw/siw.ko"], reason: "-" };
const changed = (...paths: string[]): TreeChange[] => paths.map((path) => ({ path, kind: "modified" }));

t.test("a module-only series off the headers shares its base's interface", async (t) => {
  const driver = changed("drivers/infiniband/sw/siw/siw_qp.c", "drivers/infiniband/hw/erdma/erdma.h");
  t.equal(sharedModuleInterface(base, modules, driver, true), "base-key");
  t.equal(
    sharedModuleInterface(
      {
        key: "k2",
        rebuild: {
          mode: "modules",
          reason: "-",
          baseKey: "base-key",
          steps: 8,
          moduleInterfaceOf: "base-key",
        },
      },
      modules,
      driver,
      true,
    ),
    "base-key",
    "a series on a kernel that shares its base's shares that one",
  );
});

t.test("anything a guest module could see makes the kernel's interface its own", async (t) => {
  const driver = changed("drivers/infiniband/sw/siw/siw_qp.c");
  t.equal(sharedModuleInterface(base, modules, driver, false), undefined, "Module.symvers changed");
  for (const header of ["include/rdma/ib_verbs.h", "arch/x86/include/asm/io.h"])
    t.equal(sharedModuleInterface(base, modules, changed(header), true), undefined, header);
  for (const plan of [
    { mode: "incremental", reconfigure: false, reason: "-" },
    { mode: "full", reason: "-" },
  ] as const)
    t.equal(sharedModuleInterface(base, plan, driver, true), undefined, `a ${plan.mode} build`);
});

t.test("guest modules are keyed by the interface a kernel shares, else by the kernel", async (t) => {
  t.equal(moduleInterfaceKey({ key: "k" }), "k");
  t.equal(
    moduleInterfaceKey({
      key: "k",
      rebuild: { mode: "modules", reason: "-", baseKey: "b", steps: 1, moduleInterfaceOf: "b" },
    }),
    "b",
  );
  t.equal(
    moduleInterfaceKey({ key: "k", rebuild: { mode: "incremental", reason: "-", baseKey: "b", steps: 9 } }),
    "k",
  );
});
