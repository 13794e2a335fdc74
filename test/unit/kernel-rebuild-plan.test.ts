import t from "tap";
import { type ChangeFacts, planRebuild } from "../../harness/kernel/rebuild-plan.ts";
import type { TreeChange } from "../../harness/kernel/tree-diff.ts";

const ERDMA = "drivers/infiniband/hw/erdma";
const SIW = "drivers/infiniband/sw/siw";

/** A base build as its .cmd records describe it (a small part of debian:6.12 + base.config). */
const USERS: Record<string, string[]> = {
  [`${ERDMA}/erdma_main.c`]: [`${ERDMA}/erdma_main.o`],
  [`${ERDMA}/erdma_hw.h`]: [`${ERDMA}/erdma_cmdq.o`, `${ERDMA}/erdma_main.o`, `${ERDMA}/erdma_qp.o`],
  "include/rdma/iw_cm.h": [`${ERDMA}/erdma_cm.o`, `${SIW}/siw_cm.o`],
  "include/linux/module.h": ["init/main.o", `${ERDMA}/erdma.mod.o`],
  "init/main.c": ["init/main.o"],
  "arch/x86/entry/syscalls/syscall_64.tbl": ["arch/x86/include/generated/asm/syscalls_64.h"],
  "drivers/infiniband/core/verbs.c": ["drivers/infiniband/core/verbs.o"],
};
const MODULES: Record<string, string> = {
  [`${ERDMA}/erdma_main.o`]: `${ERDMA}/erdma.ko`,
  [`${ERDMA}/erdma_cmdq.o`]: `${ERDMA}/erdma.ko`,
  [`${ERDMA}/erdma_qp.o`]: `${ERDMA}/erdma.ko`,
  [`${ERDMA}/erdma_cm.o`]: `${ERDMA}/erdma.ko`,
  [`${ERDMA}/erdma.mod.o`]: `${ERDMA}/erdma.ko`,
  [`${SIW}/siw_cm.o`]: `${SIW}/siw.ko`,
  "drivers/infiniband/core/verbs.o": "drivers/infiniband/core/ib_core.ko",
};
const HEADER_NAMES: Record<string, string[]> = {
  "arch/x86/include/asm/rwonce.h": ["include/asm-generic/rwonce.h"],
};

function facts(changes: TreeChange[]): ChangeFacts {
  return {
    changes,
    dependents: new Map(changes.map((c) => [c.path, USERS[c.path] ?? []])),
    sameNamed: new Map(changes.map((c) => [c.path, HEADER_NAMES[c.path] ?? []])),
    moduleOf: (target) => MODULES[target],
  };
}

const modified = (...paths: string[]) => paths.map((path): TreeChange => ({ path, kind: "modified" }));

t.test("changes used only by modules rebuild just those modules", async (t) => {
  t.same(planRebuild(facts(modified(`${ERDMA}/erdma_main.c`))), {
    mode: "modules",
    modules: [`${ERDMA}/erdma.ko`],
    reason: "only modules use the changed files: erdma.ko",
  });
  const header = planRebuild(facts(modified(`${ERDMA}/erdma_hw.h`, `${ERDMA}/erdma_main.c`)));
  t.same(
    header.mode === "modules" && header.modules,
    [`${ERDMA}/erdma.ko`],
    "a driver header shared by its objects",
  );
  const shared = planRebuild(facts(modified("include/rdma/iw_cm.h")));
  t.same(
    shared.mode === "modules" && shared.modules,
    [`${ERDMA}/erdma.ko`, `${SIW}/siw.ko`],
    "a header of two modules",
  );
  const core = planRebuild(facts(modified("drivers/infiniband/core/verbs.c")));
  t.same(
    core.mode === "modules" && core.modules,
    ["drivers/infiniband/core/ib_core.ko"],
    "ib_core is a module here",
  );
});

t.test("a change that reaches built-in code continues the whole build", async (t) => {
  t.same(planRebuild(facts(modified("init/main.c"))), {
    mode: "incremental",
    reconfigure: false,
    reason: "init/main.c reaches built-in init/main.o",
  });
  t.same(planRebuild(facts(modified(`${ERDMA}/erdma_main.c`, "include/linux/module.h"))), {
    mode: "incremental",
    reconfigure: false,
    reason: "include/linux/module.h reaches built-in init/main.o",
  });
  t.match(planRebuild(facts(modified("arch/x86/entry/syscalls/syscall_64.tbl"))), {
    mode: "incremental",
    reason: /reaches built-in arch\/x86\/include\/generated\/asm\/syscalls_64\.h/,
  });
});

t.test("build rules and configuration inputs continue the whole build", async (t) => {
  t.same(planRebuild(facts(modified(`${ERDMA}/Makefile`, `${ERDMA}/erdma_main.c`))), {
    mode: "incremental",
    reconfigure: false,
    reason: `build rules change: ${ERDMA}/Makefile`,
  });
  t.same(planRebuild(facts(modified(`${ERDMA}/Kconfig`))), {
    mode: "incremental",
    reconfigure: true,
    reason: `the configuration's input changes: ${ERDMA}/Kconfig`,
  });
  t.match(planRebuild(facts(modified("kernel/configs/tiny.config"))), {
    mode: "incremental",
    reconfigure: true,
  });
  t.match(planRebuild(facts(modified("arch/x86/Kbuild"))), { mode: "incremental", reconfigure: false });
});

t.test("what Kbuild's tracking cannot see is built from scratch", async (t) => {
  t.same(planRebuild(facts(modified("scripts/mod/modpost.c", `${ERDMA}/erdma_main.c`))), {
    mode: "full",
    reason: "Kbuild's own scripts change: scripts/mod/modpost.c",
  });
  t.same(planRebuild(facts([{ path: "arch/x86/include/asm/rwonce.h", kind: "added" }])), {
    mode: "full",
    reason:
      "new header arch/x86/include/asm/rwonce.h may shadow include/asm-generic/rwonce.h in include lookups",
  });
});

t.test("files no build step uses", async (t) => {
  const unused = planRebuild(
    facts([
      ...modified(
        "drivers/net/ethernet/intel/e1000/e1000_main.c",
        "Documentation/infiniband/erdma.rst",
        "MAINTAINERS",
        "tools/testing/selftests/rdma/rping.sh",
      ),
      { path: `${ERDMA}/erdma_new.h`, kind: "added" },
    ]),
  );
  t.same(unused, {
    mode: "modules",
    modules: [],
    reason: "nothing this configuration builds uses the changed files",
  });
  t.match(planRebuild(facts(modified("usr/gen_initramfs.sh"))), {
    mode: "incremental",
    reason: "usr/gen_initramfs.sh is no compiler input and no build step names it; Kbuild decides",
  });
  t.same(planRebuild(facts([{ path: `${ERDMA}/erdma_main.c`, kind: "deleted" }])), {
    mode: "incremental",
    reconfigure: false,
    reason: `${ERDMA}/erdma_main.c is deleted; ${ERDMA}/erdma_main.o used it`,
  });
  t.same(planRebuild(facts([])), {
    mode: "modules",
    modules: [],
    reason: "nothing this configuration builds uses the changed files",
  });
});
