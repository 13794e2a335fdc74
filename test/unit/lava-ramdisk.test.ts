// The job's ramdisk: the guest image's layers (newc archives laid end to end, plain or gzip) as
// one gzip newc archive, which GNU cpio (LAVA's AppendOverlays) reads whole.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import t from "tap";
import { writeCpioGz } from "../../harness/image/cpio.ts";
import { writeSingleArchiveRamdisk } from "../../harness/lava/ramdisk.ts";

t.test("every layer's entries in one archive, in order, with one trailer", async (t) => {
  const dir = t.testdir({});
  const first = join(dir, "first.cpio.gz");
  const second = join(dir, "second.cpio.gz");
  await writeCpioGz(first, [
    { kind: "dir", path: "etc", mode: 0o755 },
    { kind: "file", path: "etc/motd", mode: 0o644, data: Buffer.from("first\n") },
  ]);
  await writeCpioGz(second, [
    { kind: "file", path: "etc/motd", mode: 0o644, data: Buffer.from("second\n") },
    { kind: "symlink", path: "motd", target: "etc/motd" },
  ]);
  // a plain part that is two archives laid end to end, as composeInitramfs writes the image
  const plain = join(dir, "image.cpio");
  writeFileSync(plain, Buffer.concat([gunzipSync(readFileSync(first)), gunzipSync(readFileSync(second))]));
  const out = join(dir, "ramdisk.cpio.gz");
  await writeSingleArchiveRamdisk(out, [plain, second]);
  const data = gunzipSync(readFileSync(out));
  t.equal(data.toString("latin1").split("TRAILER!!!").length - 1, 1, "one trailer");
  const listed = execFileSync("cpio", ["-t", "--quiet"], { input: data, encoding: "utf8" })
    .trim()
    .split("\n");
  t.same(listed, ["etc", "etc/motd", "etc/motd", "motd", "etc/motd", "motd"], "GNU cpio reads every entry");
  const unpacked = join(dir, "root");
  execFileSync("mkdir", [unpacked]);
  execFileSync("cpio", ["-i", "-d", "-u", "--quiet"], { input: data, cwd: unpacked });
  t.equal(
    readFileSync(join(unpacked, "etc/motd"), "utf8"),
    "second\n",
    "a later entry replaces an earlier one",
  );
  const inodes = new Set<string>();
  for (let at = data.indexOf("070701"); at >= 0; at = data.indexOf("070701", at + 110))
    inodes.add(data.toString("ascii", at + 6, at + 14));
  t.equal(inodes.size, 7, "each entry (and the trailer) its own inode number");
});

t.test("a part that is not a newc archive is one error naming it", async (t) => {
  const dir = t.testdir({
    "junk.bin":
      "this is no cpio archive at all, not even close to one................................................",
  });
  const junk = join(dir, "junk.bin");
  await t.rejects(writeSingleArchiveRamdisk(join(dir, "out.gz"), [junk]), {
    name: "HilError",
    where: junk,
    message: /not a newc \(070701\) cpio header at offset 0/,
  });
});
