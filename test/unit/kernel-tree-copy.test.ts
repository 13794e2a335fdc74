import {
  lstatSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import t from "tap";
import { touchChanged } from "../../harness/kernel/rebuild.ts";
import { copyBuildTree } from "../../harness/kernel/tree-copy.ts";
import { diffLinkedTrees } from "../../harness/kernel/tree-diff.ts";
import { run } from "../../util/exec.ts";

const OLD = new Date("2024-01-01T00:00:00Z");

t.test("a series' changes in a hard-linked patched tree: modified, added, deleted", async (t) => {
  const dir = t.testdir({
    pristine: { "a.c": "a\n", "b.h": "b\n", gone: { "c.c": "c\n" }, "link.h": t.fixture("symlink", "b.h") },
  });
  const patched = join(dir, "patched");
  await run("cp -al", "cp", ["-al", join(dir, "pristine"), patched]);
  t.same(await diffLinkedTrees(join(dir, "pristine"), patched), [], "a fresh copy differs in nothing");
  writeFileSync(join(patched, "a.c.new"), "A\n");
  await run("mv", "mv", [join(patched, "a.c.new"), join(patched, "a.c")]);
  writeFileSync(join(patched, "new.h"), "n\n");
  await run("rm", "rm", ["-r", join(patched, "gone")]);
  t.same(await diffLinkedTrees(join(dir, "pristine"), patched), [
    { path: "a.c", kind: "modified" },
    { path: "gone/c.c", kind: "deleted" },
    { path: "new.h", kind: "added" },
  ]);
});

t.test(
  "the changed files of the patched tree get a fresh time stamp; the base's files keep theirs",
  async (t) => {
    const dir = t.testdir({ pristine: { "a.c": "a\n", "b.h": "b\n" } });
    for (const f of ["a.c", "b.h"]) utimesSync(join(dir, "pristine", f), OLD, OLD);
    const patched = join(dir, "patched");
    await run("cp -al", "cp", ["-al", join(dir, "pristine"), patched]);
    symlinkSync("b.h", join(patched, "l.h"));
    writeFileSync(join(patched, "a.c.new"), "A\n");
    utimesSync(join(patched, "a.c.new"), OLD, OLD);
    await run("mv", "mv", [join(patched, "a.c.new"), join(patched, "a.c")]);
    const started = Date.now();
    await touchChanged(patched, [
      { path: "a.c", kind: "modified" },
      { path: "l.h", kind: "added" },
      { path: "gone.c", kind: "deleted" },
    ]);
    t.ok(statSync(join(patched, "a.c")).mtimeMs >= started - 1000, "a changed file is newer than any build");
    t.ok(lstatSync(join(patched, "l.h")).mtimeMs >= started - 1000, "a changed symlink itself too");
    t.equal(
      statSync(join(dir, "pristine", "b.h")).mtimeMs,
      OLD.getTime(),
      "the base tree keeps its time stamps",
    );
    t.equal(statSync(join(dir, "pristine", "a.c")).mtimeMs, OLD.getTime());
  },
);

t.test("the build tree copy names the new trees everywhere and keeps every time stamp", async (t) => {
  const root = t.testdir({});
  const oldSrc = join(root, "kernel-base", "k1", "src");
  const oldBuild = join(root, "kernel", "k2", "build");
  const newSrc = join(root, "kernel", "k3", "src");
  const newBuild = join(root, "kernel", "k3", "build");
  const cmd = `savedcmd_init/main.o := gcc -I${oldSrc}/include -fmacro-prefix-map=${oldSrc}/= ${oldSrc}/init/main.c\ndeps_init/main.o := \\\n  ${oldSrc}/include/linux/init.h \\\n  ${oldSrc}2/not/ours.h \\\n`;
  const objtool = `cmd_tools/objtool/check.o := gcc -o ${oldBuild}/tools/objtool/check.o\n`;
  const binary = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0]), Buffer.from(oldSrc)]);
  await run("mkdir", "mkdir", [
    "-p",
    join(oldBuild, "init"),
    join(oldBuild, "tools/objtool"),
    join(root, "kernel", "k3"),
  ]);
  writeFileSync(join(oldBuild, "init", ".main.o.cmd"), cmd);
  writeFileSync(join(oldBuild, "tools/objtool", ".check.o.cmd"), objtool);
  writeFileSync(join(oldBuild, "Makefile"), `include ${oldSrc}/Makefile\n`);
  writeFileSync(join(oldBuild, "init", "main.o"), binary);
  symlinkSync(oldSrc, join(oldBuild, "source"));
  for (const f of ["init/.main.o.cmd", "init/main.o", "Makefile"]) utimesSync(join(oldBuild, f), OLD, OLD);

  await copyBuildTree({ srcDir: oldSrc, buildDir: oldBuild }, { srcDir: newSrc, buildDir: newBuild });
  t.equal(
    readFileSync(join(newBuild, "init", ".main.o.cmd"), "utf8"),
    cmd.replaceAll(`${oldSrc}/`, `${newSrc}/`).replace(`${newSrc}/2/not`, `${oldSrc}2/not`),
  );
  t.match(
    readFileSync(join(newBuild, "init", ".main.o.cmd"), "utf8"),
    `${oldSrc}2/not/ours.h`,
    "a longer path is not ours",
  );
  t.equal(
    readFileSync(join(newBuild, "tools/objtool", ".check.o.cmd"), "utf8"),
    objtool.replace(oldBuild, newBuild),
  );
  t.equal(readFileSync(join(newBuild, "Makefile"), "utf8"), `include ${newSrc}/Makefile\n`);
  t.equal(readlinkSync(join(newBuild, "source")), newSrc);
  t.same(readFileSync(join(newBuild, "init", "main.o")), binary, "binary files are copied as they are");
  for (const f of ["init/.main.o.cmd", "init/main.o", "Makefile"])
    t.equal(statSync(join(newBuild, f)).mtimeMs, OLD.getTime(), `${f} keeps its time stamp`);
  t.equal(
    readFileSync(join(oldBuild, "init", ".main.o.cmd"), "utf8"),
    cmd,
    "the base build tree is untouched",
  );
  t.equal(statSync(join(oldBuild, "init", "main.o")).nlink, 1, "and shares no file with the copy");
});

t.test("a build tree from a copied cache: the names its records hold are the ones rewritten", async (t) => {
  const root = t.testdir({});
  // built in cache A, copied to cache B, continued into B's new entry
  const namedSrc = join(root, "A", "kernel-base", "k1", "src");
  const namedBuild = join(root, "A", "kernel", "k2", "build");
  const copiedBuild = join(root, "B", "kernel", "k2", "build");
  const copiedSrc = join(root, "B", "kernel-base", "k1", "src");
  const newSrc = join(root, "B", "kernel-patched", "k3", "src");
  const newBuild = join(root, "B", "kernel", "k4", "build");
  const cmd = `savedcmd_init/main.o := gcc -I${namedSrc}/include -o ${namedBuild}/init/main.o\n`;
  await run("mkdir", "mkdir", ["-p", join(copiedBuild, "init"), join(root, "B", "kernel", "k4")]);
  writeFileSync(join(copiedBuild, "init", ".main.o.cmd"), cmd);
  symlinkSync(namedSrc, join(copiedBuild, "source"));
  await copyBuildTree(
    { srcDir: copiedSrc, buildDir: copiedBuild },
    { srcDir: newSrc, buildDir: newBuild },
    { srcDir: namedSrc, buildDir: namedBuild },
  );
  t.equal(
    readFileSync(join(newBuild, "init", ".main.o.cmd"), "utf8"),
    `savedcmd_init/main.o := gcc -I${newSrc}/include -o ${newBuild}/init/main.o\n`,
    "no record of the new tree names cache A",
  );
  t.equal(readlinkSync(join(newBuild, "source")), newSrc);
});

t.test("another configuration of the same source tree: the build dir renamed, the source kept", async (t) => {
  const root = t.testdir({});
  const src = join(root, "kernel-base", "k1", "src");
  const oldBuild = join(root, "kernel", "k2", "build");
  const newBuild = join(root, "kernel", "k3", "build");
  await run("mkdir", "mkdir", ["-p", join(oldBuild, "init"), join(root, "kernel", "k3")]);
  const cmd = `savedcmd_init/main.o := gcc -I${src}/include -o ${oldBuild}/init/main.o ${src}/init/main.c\n`;
  writeFileSync(join(oldBuild, "init", ".main.o.cmd"), cmd);
  symlinkSync(src, join(oldBuild, "source"));
  await copyBuildTree({ srcDir: src, buildDir: oldBuild }, { srcDir: src, buildDir: newBuild });
  t.equal(readFileSync(join(newBuild, "init", ".main.o.cmd"), "utf8"), cmd.replace(oldBuild, newBuild));
  t.equal(readlinkSync(join(newBuild, "source")), src, "the source tree is the same one");
});
