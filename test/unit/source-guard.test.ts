// The check after each kernel compile (harness/kernel/source-guard.ts) on real trees: a patched
// tree made as apply.ts makes it (cp -al of the base, then GNU patch) is untouched by a build that
// writes only its O= tree; a write through a link it shares with the base is named as such.
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { assertSourceUntouched, sourceWrittenSince } from "../../harness/kernel/source-guard.ts";
import { run } from "../../util/exec.ts";

async function linkedTrees(t: Test): Promise<{ base: string; patched: string; build: string }> {
  const dir = mkdtempSync(join(tmpdir(), "hil-source-guard-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const base = join(dir, "base");
  mkdirSync(join(base, "drivers", "erdma"), { recursive: true });
  writeFileSync(join(base, "Makefile"), "all:\n");
  writeFileSync(join(base, "drivers", "erdma", "erdma_qp.c"), "int qp;\n");
  writeFileSync(join(base, "drivers", "erdma", "erdma_cq.c"), "int cq;\n");
  const patched = join(dir, "patched");
  await run("cp -al", "cp", ["-al", base, patched]);
  const diff =
    "--- a/drivers/erdma/erdma_cq.c\n+++ b/drivers/erdma/erdma_cq.c\n@@ -1 +1 @@\n-int cq;\n+int cq2;\n";
  writeFileSync(join(dir, "p.patch"), diff);
  await run("patch", "patch", ["-p1", "-i", join(dir, "p.patch")], { cwd: patched });
  const build = join(dir, "build");
  mkdirSync(build);
  return { base, patched, build };
}

const later = () => new Promise((r) => setTimeout(r, 20));

t.test("a build that writes only its build tree leaves the source untouched", async (t) => {
  const { patched, build } = await linkedTrees(t);
  await later();
  const since = Date.now();
  await later();
  writeFileSync(join(build, "erdma_cq.o"), "object");
  await assertSourceUntouched(patched, since);
  t.same(await sourceWrittenSince(patched, since), []);
});

t.test("a write through a hard link into the base tree is named, with the link", async (t) => {
  const { base, patched } = await linkedTrees(t);
  await later();
  const since = Date.now();
  await later();
  // in place, as a compiler writing an output over an existing file does (O_TRUNC, no rename)
  const fd = openSync(join(patched, "drivers", "erdma", "erdma_qp.c"), "r+");
  writeSync(fd, "int QP;\n");
  closeSync(fd);
  t.equal(
    statSync(join(base, "drivers", "erdma", "erdma_qp.c")).mtimeMs >= since,
    true,
    "the base changed too",
  );
  t.same(await sourceWrittenSince(patched, since), [{ path: "drivers/erdma/erdma_qp.c", links: 2 }]);
  await t.rejects(assertSourceUntouched(patched, since), {
    message:
      "the build wrote 1 file(s) of the source tree through a hard link shared with the cached base tree, first drivers/erdma/erdma_qp.c",
    where: patched,
    exitCode: 3,
  });
});

t.test("a new file in the source tree is a write into it, not through a link", async (t) => {
  const { patched } = await linkedTrees(t);
  await later();
  const since = Date.now();
  await later();
  writeFileSync(join(patched, "drivers", "erdma", "erdma_qp.o"), "object in the wrong tree");
  await t.rejects(assertSourceUntouched(patched, since), {
    message: "the build wrote 1 file(s) into the source tree, first drivers/erdma/erdma_qp.o",
  });
});
