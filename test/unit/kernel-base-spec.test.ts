import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  ACCEPTED_BASE_FORMS,
  DEBIAN_BASES,
  isTarballName,
  parseBaseSpec,
} from "../../harness/kernel/base-spec.ts";
import { hashTree } from "../../harness/kernel/tree-hash.ts";
import { HilError } from "../../util/errors.ts";

t.test("Debian bases map to their source packages and suites", async (t) => {
  t.same(parseBaseSpec("debian:6.1"), {
    kind: "debian",
    name: "debian:6.1",
    package: "linux-source-6.1",
    suite: "bookworm",
  });
  t.same(parseBaseSpec("debian:6.12"), {
    kind: "debian",
    name: "debian:6.12",
    package: "linux-source-6.12",
    suite: "bookworm-backports",
  });
  t.same(parseBaseSpec("debian:7.2"), {
    kind: "debian",
    name: "debian:7.2",
    package: "linux-source-7.2",
    suite: "sid",
  });
  t.equal(Object.keys(DEBIAN_BASES).length, 3);
});

t.test("unknown bases are one error listing the accepted forms", async (t) => {
  for (const base of ["debian:5.10", "ubuntu:24.04", "./no/such/dir", "linux.zip"]) {
    try {
      parseBaseSpec(base, "/");
      t.fail(`${base} should be rejected`);
    } catch (err) {
      t.ok(err instanceof HilError, base);
      const text = (err as HilError).format();
      t.match(text, base.replace(/^\.\//, ""), `${base}: the message names the base`);
      for (const form of ACCEPTED_BASE_FORMS) t.ok(text.includes(form), `${base}: lists ${form}`);
    }
  }
});

t.test("directories: git, plain, or not a kernel tree", async (t) => {
  const kernel = () => ({ Makefile: "VERSION = 6\n", Kconfig: "", scripts: { kconfig: {} } });
  const dir = t.testdir({
    plain: kernel(),
    git: { ...kernel(), ".git": {} },
    other: { "a.txt": "" },
    "linux.tar.xz": "x",
  });
  t.same(parseBaseSpec(join(dir, "plain")), { kind: "dir", path: join(dir, "plain") });
  t.same(parseBaseSpec("git", dir), { kind: "git", path: join(dir, "git") });
  t.same(parseBaseSpec("linux.tar.xz", dir), { kind: "tarball", path: join(dir, "linux.tar.xz") });
  t.throws(() => parseBaseSpec(join(dir, "other")), /is a directory but not a kernel source tree/);
  t.ok(
    isTarballName("a.tar.gz") &&
      isTarballName("a.tar.bz2") &&
      isTarballName("a.tar") &&
      !isTarballName("a.zip"),
  );
});

t.test("a plain directory's key follows its contents", async (t) => {
  const dir = t.testdir({ tree: { Makefile: "x", sub: { "a.c": "int a;" } } });
  const tree = join(dir, "tree");
  const first = await hashTree(tree);
  t.equal(await hashTree(tree), first);
  writeFileSync(join(tree, "sub", "a.c"), "int b;");
  const second = await hashTree(tree);
  t.not(second, first, "content change");
  mkdirSync(join(tree, "empty"));
  t.not(await hashTree(tree), second, "a new empty directory");
});

t.test(
  "<repo>@<ref>: a git repository (work tree or bare) and a ref, the leftmost @ that ends a directory",
  async (t) => {
    const dir = t.testdir({
      repo: { ".git": {} },
      bare: { HEAD: "ref: refs/heads/main\n", objects: {}, refs: {} },
      "at@dir": { ".git": {} },
      notgit: { "a.txt": "" },
    });
    t.same(parseBaseSpec("repo@for-next", dir), {
      kind: "git-ref",
      repo: join(dir, "repo"),
      ref: "for-next",
    });
    t.same(parseBaseSpec(`${join(dir, "bare")}@v6.12`), {
      kind: "git-ref",
      repo: join(dir, "bare"),
      ref: "v6.12",
    });
    t.same(parseBaseSpec("repo@main@{1}", dir), {
      kind: "git-ref",
      repo: join(dir, "repo"),
      ref: "main@{1}",
    });
    t.same(parseBaseSpec("at@dir@abc123", dir), {
      kind: "git-ref",
      repo: join(dir, "at@dir"),
      ref: "abc123",
    });
    t.throws(() => parseBaseSpec("notgit@main", dir), /notgit is not a git repository/);
    t.throws(() => parseBaseSpec("repo@", dir), /"" is not a ref/);
    t.throws(() => parseBaseSpec("repo@--upload-pack=x", dir), /is not a ref/);
    t.throws(() => parseBaseSpec("nosuch@main", dir), /not a known base, and no such file or directory/);
  },
);
