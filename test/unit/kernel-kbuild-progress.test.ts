import { join } from "node:path";
import t from "tap";
import {
  KbuildCounter,
  parseKbuildLine,
  readStats,
  recordStats,
} from "../../harness/kernel/kbuild-progress.ts";

t.test("Kbuild quiet lines are steps; CC/AS of a .o are objects", async (t) => {
  const c = new KbuildCounter();
  const lines = [
    "  CC      init/main.o",
    "  CC [M]  drivers/infiniband/hw/erdma/erdma_main.o",
    "  AS      arch/x86/entry/entry_64.o",
    "  LD [M]  drivers/infiniband/hw/erdma/erdma.ko",
    "  GEN     Makefile",
    "make[1]: Entering directory '/x'",
    "init/main.c:12:1: warning: something",
    "  HOSTCC  scripts/basic/fixdep",
    "  CC      arch/x86/kernel/asm-offsets.s",
  ];
  for (const l of lines) c.feed(l);
  t.equal(c.steps, 7);
  t.equal(c.objects, 3);
  t.same(parseKbuildLine("  CC [M]  drivers/x.o"), { tag: "CC", target: "drivers/x.o", isObject: true });
  t.equal(parseKbuildLine("    indented output"), undefined);
});

t.test("stats are kept per kernel version and survive a bad file", async (t) => {
  const dir = t.testdir({ "bad.json": "{not json" });
  const file = join(dir, "stats.json");
  t.same(readStats(file), {});
  t.same(readStats(join(dir, "bad.json")), {});
  await recordStats("6.12", { steps: 2000, objects: 1500, seconds: 300 }, file);
  await recordStats("6.1", { steps: 1900, objects: 1400, seconds: 280 }, file);
  await recordStats("6.12", { steps: 2001, objects: 1501, seconds: 290 }, file);
  t.same(readStats(file), {
    "6.12": { steps: 2001, objects: 1501, seconds: 290 },
    "6.1": { steps: 1900, objects: 1400, seconds: 280 },
  });
});
