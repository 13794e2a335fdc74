import t from "tap";
import { dependencyClosure, parseAptDepends } from "../../harness/image/closure.ts";

// Shaped like `apt-cache depends --recurse --no-recommends ...` output.
const LISTING = `tool
  Depends: libfoo1
 |Depends: debconf
  Depends: <debconf-2.0>
    cdebconf
    debconf
  PreDepends: libc6
  Depends: adduser
 |Depends: libalt-a
  Depends: libalt-b
  Depends: <only-virtual>
libfoo1
  Depends: libc6:amd64
libc6
  Depends: libgcc-s1
libgcc-s1
  Depends: libc6
debconf
adduser
  Depends: passwd
passwd
  Depends: libpam0g
libpam0g
libalt-a
  Depends: libc6
libalt-b
<debconf-2.0>
<only-virtual>
`;

const PACKAGING_ONLY = new Set(["debconf", "adduser", "passwd"]);

t.test("parses dependency groups with alternatives and pre-depends", async (t) => {
  const graph = parseAptDepends(LISTING);
  t.same(graph.get("tool")?.depends, [
    ["libfoo1"],
    ["debconf", "<debconf-2.0>"],
    ["libc6"],
    ["adduser"],
    ["libalt-a", "libalt-b"],
    ["<only-virtual>"],
  ]);
  t.same(graph.get("libfoo1")?.depends, [["libc6"]], "the :amd64 qualifier is dropped");
  t.equal(graph.get("debconf-2.0")?.real, false);
  t.equal(graph.get("libc6")?.real, true);
});

t.test("closure follows first alternatives, skips virtual and packaging-only packages", async (t) => {
  const closure = dependencyClosure(parseAptDepends(LISTING), ["tool"], PACKAGING_ONLY);
  t.same(closure, ["libalt-a", "libc6", "libfoo1", "libgcc-s1", "tool"]);
});

t.test("a root missing from the listing is an error naming it", async (t) => {
  t.throws(() => dependencyClosure(parseAptDepends(LISTING), ["nosuch"], PACKAGING_ONLY), {
    name: "HilError",
    message: /nosuch/,
  });
});
