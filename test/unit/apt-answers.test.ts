import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import { answersDir, askApt, forgetAnswers } from "../../util/apt-answers.ts";

/** A context dir with one list file and an apt-get on PATH that counts its runs. */
function fixture(t: Test, exitCode = 0) {
  const dir = mkdtempSync(join(tmpdir(), "hil-apt-answers-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, "bin");
  const lists = join(dir, "lists");
  mkdirSync(bin);
  mkdirSync(join(lists, "partial"), { recursive: true });
  writeFileSync(join(lists, "deb.debian.org_dists_bookworm_InRelease"), "lists v1\n");
  const runs = join(dir, "runs");
  writeFileSync(
    join(bin, "apt-get"),
    `#!/bin/sh\necho run >> ${runs}\necho "answer for $*"\necho "said on stderr" >&2\nexit ${exitCode}\n`,
    { mode: 0o755 },
  );
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  t.teardown(() => {
    process.env.PATH = path;
  });
  const count = () => {
    try {
      return readFileSync(runs, "utf8").split("\n").filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  return { dir, lists, count };
}

t.test("the same question about the same lists is answered once by apt", async (t) => {
  const { dir, lists, count } = fixture(t);
  const first = await askApt(dir, lists, "apt-get", ["--print-uris", "download", "busybox"]);
  const again = await askApt(dir, lists, "apt-get", ["--print-uris", "download", "busybox"]);
  t.equal(count(), 1);
  t.same(again, first);
  t.equal(first.stdout, "answer for --print-uris download busybox");
  t.equal(first.stderr, "said on stderr");
  await askApt(dir, lists, "apt-get", ["--print-uris", "download", "dropbear-bin"]);
  t.equal(count(), 2, "another question is asked");
});

t.test("lists that changed, or answers forgotten, send the question to apt again", async (t) => {
  const { dir, lists, count } = fixture(t);
  const file = join(lists, "deb.debian.org_dists_bookworm_InRelease");
  await askApt(dir, lists, "apt-get", ["x"]);
  writeFileSync(file, "lists v2, longer\n");
  await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(count(), 2, "a list file of another size");
  const later = new Date(Date.now() + 60_000);
  utimesSync(file, later, later);
  await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(count(), 3, "a list file of another mtime");
  forgetAnswers(dir);
  await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(count(), 4, "after an update forgot them");
  await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(count(), 4);
});

t.test("a failed answer is not kept", async (t) => {
  const { dir, lists, count } = fixture(t, 100);
  const r = await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(r.exitCode, 100);
  await askApt(dir, lists, "apt-get", ["x"]);
  t.equal(count(), 2);
});

t.test("no lists (never updated), or an unreadable answer: apt is asked", async (t) => {
  const { dir, lists, count } = fixture(t);
  await askApt(dir, join(dir, "no-lists"), "apt-get", ["x"]);
  await askApt(dir, join(dir, "no-lists"), "apt-get", ["x"]);
  t.equal(count(), 2);
  await askApt(dir, lists, "apt-get", ["y"]);
  const [kept] = readdirSync(answersDir(dir));
  writeFileSync(join(answersDir(dir), kept as string), "{ cut sh");
  const r = await askApt(dir, lists, "apt-get", ["y"]);
  t.equal(count(), 4);
  t.equal(r.stdout, "answer for y");
});
