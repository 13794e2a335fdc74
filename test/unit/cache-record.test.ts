import t from "tap";
import { recordedPath, resolveRecorded, writtenRoot } from "../../util/cache-record.ts";

const ROOT = "/b/cache";
const ENTRY = "/b/cache/kernel/k1";

t.test("a record stores paths relative to its entry, sibling entries included", async (t) => {
  t.equal(recordedPath(ROOT, ENTRY, `${ENTRY}/bzImage`), "bzImage");
  t.equal(recordedPath(ROOT, ENTRY, ENTRY), ".");
  t.equal(recordedPath(ROOT, ENTRY, "/b/cache/kernel-base/k0/src"), "../../kernel-base/k0/src");
  t.throws(
    () => recordedPath(ROOT, ENTRY, "/elsewhere/src"),
    /would name \/elsewhere\/src, outside the cache/,
  );
  t.throws(
    () => recordedPath(ROOT, ENTRY, "/b/cache2/x"),
    /outside the cache/,
    "a longer name is not inside",
  );
});

t.test("the root an older record was written in, from a path naming the entry itself", async (t) => {
  const paths = ["/a/old/cache/kernel-base/k0/src", "/a/old/cache/kernel/k1/bzImage"];
  t.equal(writtenRoot(ROOT, ENTRY, paths), "/a/old/cache");
  t.equal(writtenRoot(ROOT, ENTRY, ["/a/old/cache/kernel/k1"]), "/a/old/cache");
  t.equal(writtenRoot(ROOT, ENTRY, ["/a/old/cache/kernel/k10/bzImage"]), undefined, "another key");
  t.equal(writtenRoot(ROOT, ENTRY, ["bzImage"]), undefined, "relative paths say nothing");
  t.equal(writtenRoot("/c", "/c/kmod/hil_kverbs/k9", ["/x/kmod/hil_kverbs/k9/a.ko"]), "/x", "nested kinds");
});

t.test("recorded paths resolve into the cache the entry is in now", async (t) => {
  t.equal(resolveRecorded(ROOT, ENTRY, "bzImage", undefined, "artifact.json"), `${ENTRY}/bzImage`);
  t.equal(
    resolveRecorded(ROOT, ENTRY, "../../kernel-base/k0/src", undefined, "artifact.json"),
    "/b/cache/kernel-base/k0/src",
  );
  t.equal(
    resolveRecorded(ROOT, ENTRY, "/a/old/cache/kernel-base/k0/src", "/a/old/cache", "artifact.json"),
    "/b/cache/kernel-base/k0/src",
    "an absolute path of the old cache moves with it",
  );
  t.equal(
    resolveRecorded(ROOT, ENTRY, "/b/cache/kernel/k1/config", "/b/cache", "artifact.json"),
    "/b/cache/kernel/k1/config",
    "a record of this very cache stays as it is",
  );
  t.throws(
    () => resolveRecorded(ROOT, ENTRY, "/a/old/other/src", "/a/old/cache", "artifact.json"),
    /names \/a\/old\/other\/src, outside the cache it is in \(\/b\/cache\)/,
  );
  t.throws(
    () => resolveRecorded(ROOT, ENTRY, "../../../../etc/passwd", undefined, "artifact.json"),
    /outside the cache/,
  );
  let where: string | undefined;
  try {
    resolveRecorded(ROOT, ENTRY, "/x", undefined, "artifact.json");
  } catch (err) {
    where = (err as { where?: string }).where;
  }
  t.equal(where, `${ENTRY}/artifact.json`, "the error names the record");
});
