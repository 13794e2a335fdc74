// The out-of-tree guest module builder against a real kernel build tree (debian:6.12): a module
// is built once and then found in the cache; a module that does not compile fails with the
// compiler's error lines (relative to the module's own directory) and leaves nothing in the
// cache; warnings are kept with the module; the initramfs layer holds the .ko where the guest
// looks for it; sources shared with other programs are copied beside the module and keyed.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import t from "tap";
import { listCpio } from "../../harness/image/cpio.ts";
import {
  buildGuestModule,
  buildGuestModulesLayer,
  guestModuleKey,
  guestModulePath,
} from "../../harness/image/kmod.ts";
import { buildTestdevModule } from "../../harness/image/testdev-module.ts";
import { buildKernel } from "../../harness/kernel/build.ts";
import { cacheRoot } from "../../util/cache.ts";

t.setTimeout(30 * 60 * 1000);

const kernel = await buildKernel({ base: process.env.HIL_TEST_KERNEL ?? "debian:6.12", configs: [] });
const scratch = mkdtempSync(join(tmpdir(), "hil-kmod-test-"));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

function moduleDir(name: string, source: string): string {
  const dir = join(scratch, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "Kbuild"), `obj-m := ${name}.o\n`);
  writeFileSync(join(dir, `${name}.c`), source);
  return dir;
}

const HEADER = '#include <linux/module.h>\nMODULE_LICENSE("GPL");\nMODULE_DESCRIPTION("hil kmod test");\n';

t.test("hil_testdev builds, then comes from the cache", async (t) => {
  const first = await buildTestdevModule(kernel);
  const mtime = statSync(first.path).mtimeMs;
  const again = await buildTestdevModule(kernel);
  t.equal(again.path, first.path);
  t.equal(again.key, first.key);
  t.equal(statSync(again.path).mtimeMs, mtime, "not rebuilt");
});

t.test("a module that does not compile: the compiler's error, nothing cached", async (t) => {
  const name = "hil_kmod_broken";
  const dir = moduleDir(
    name,
    `${HEADER}static int __init b_init(void)\n{\n\treturn nosuch_symbol;\n}\nmodule_init(b_init);\n`,
  );
  await t.rejects(buildGuestModule(kernel, dir, { name }), {
    name: "HilError",
    message: new RegExp(`building ${name}.ko for Linux ${kernel.release.replaceAll(".", "\\.")} failed`),
    where: dir,
    detail: /^hil_kmod_broken\.c:6:\d+: error: .nosuch_symbol. undeclared/m,
  });
  const entries = readdirSync(join(cacheRoot(), "kmod", name));
  t.same(
    entries.filter((e) => !e.endsWith(".lock")),
    [],
    "no cache entry and no temp dir left",
  );
});

t.test("warnings are kept with the module, also when it comes from the cache", async (t) => {
  const name = "hil_kmod_warns";
  const dir = moduleDir(
    name,
    `${HEADER}static int __init w_init(void)\n{\n\tint unused_variable;\n\treturn 0;\n}\nmodule_init(w_init);\n`,
  );
  const built = await buildGuestModule(kernel, dir, { name });
  t.match(built.warnings.join("\n"), /unused_variable/);
  const cached = await buildGuestModule(kernel, dir, { name });
  t.same(cached.warnings, built.warnings);
  t.equal(cached.release, kernel.release);

  const layer = await buildGuestModulesLayer([built]);
  const listing = listCpio(gunzipSync(readFileSync(layer.path)));
  t.ok(
    listing.some((e) => `/${e.path}` === guestModulePath(kernel.release, name) && e.size > 0),
    `the layer has ${guestModulePath(kernel.release, name)}`,
  );
});

t.test("a shared source directory: beside the module for its Kbuild, part of the key", async (t) => {
  const name = "hil_kmod_shared";
  const dir = moduleDir(
    name,
    `${HEADER}#include "answer.h"\nstatic int __init s_init(void)\n{\n\treturn ANSWER - 42;\n}\nmodule_init(s_init);\n`,
  );
  writeFileSync(join(dir, "Kbuild"), `obj-m := ${name}.o\nccflags-y := -I$(src)/../shared\n`);
  const shared = join(scratch, "shared");
  mkdirSync(shared, { recursive: true });
  writeFileSync(join(shared, "answer.h"), "#define ANSWER 42\n");
  const built = await buildGuestModule(kernel, dir, { name, sharedDirs: [shared] });
  t.ok(statSync(built.path).size > 0, "the module built with the shared header");
  t.same(built.warnings, []);

  writeFileSync(join(shared, "answer.h"), "#define ANSWER 43\n");
  t.not(
    await guestModuleKey(kernel, dir, { name, sharedDirs: [shared] }),
    built.key,
    "a shared file is keyed",
  );
  writeFileSync(join(shared, "answer.h"), "#define ANSWER nosuch\n");
  await t.rejects(buildGuestModule(kernel, dir, { name, sharedDirs: [shared] }), {
    message: /failed/,
    detail: /shared\/answer\.h:1:\d+: error: .nosuch. undeclared/,
  });
  await t.rejects(buildGuestModule(kernel, dir, { name, sharedDirs: [join(scratch, "x", name)] }), {
    message: /has the name of another/,
  });
});

t.test("a directory without Kbuild or Makefile is refused", async (t) => {
  const dir = join(scratch, "empty");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "x.c"), "int x;\n");
  await t.rejects(buildGuestModule(kernel, dir, { name: "x" }), {
    message: /no Kbuild or Makefile/,
    where: dir,
  });
  await t.rejects(buildGuestModule(kernel, dir, { name: "bad name" }), { message: /not a module name/ });
});
