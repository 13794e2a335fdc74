// ensureHostPackages called side by side (QEMU's build and the kernel's on a cold machine): dpkg
// takes one install at a time, so the second waits for the first, then installs only what is
// still missing. A fake dpkg-query and apt-get on PATH keep the installed set in a file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { ensureHostPackages } from "../../util/apt.ts";

const dir = mkdtempSync(join(tmpdir(), "hil-host-packages-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const bin = join(dir, "bin");
mkdirSync(bin);
const state = join(dir, "installed");
const log = join(dir, "log");
writeFileSync(state, "");
writeFileSync(
  join(bin, "dpkg-query"),
  `#!/bin/sh\nshift 2\nfor p in "$@"; do if grep -qx "$p" ${state}; then echo "$p installed"; else echo "$p not-installed"; fi; done\n`,
  { mode: 0o755 },
);
// each install logs its start and end around a pause: two at once would interleave
writeFileSync(
  join(bin, "apt-get"),
  `#!/bin/sh\nfor a in "$@"; do last=$a; done\necho "start $*" >> ${log}\nsleep 0.2\nfor a in "$@"; do case $a in -*|install|DPkg*) ;; *) echo "$a" >> ${state} ;; esac; done\necho "end" >> ${log}\n`,
  { mode: 0o755 },
);
const path = process.env.PATH;
process.env.PATH = `${bin}:${path}`;
t.teardown(() => {
  process.env.PATH = path;
});

t.test("two installs side by side run one after the other; the second installs what is left", async (t) => {
  const [a, b] = await Promise.all([
    ensureHostPackages(["flex", "bison"]),
    ensureHostPackages(["bison", "cpio"]),
  ]);
  t.same(a, ["flex", "bison"]);
  t.same(b, ["cpio"], "bison was installed by the first");
  const lines = readFileSync(log, "utf8").trim().split("\n");
  t.same(
    lines.map((l) => l.split(" ")[0]),
    ["start", "end", "start", "end"],
    "no install began before the other ended",
  );
  t.match(
    lines[0],
    /-o DPkg::Lock::Timeout=\d+ .*install flex bison$/,
    "apt waits for another process's lock",
  );
  t.same(await ensureHostPackages(["flex", "cpio"]), [], "nothing missing, nothing run");
  t.equal(readFileSync(log, "utf8").trim().split("\n").length, 4);
});

t.test("a failed install does not stop the next one", async (t) => {
  const good = readFileSync(join(bin, "apt-get"), "utf8");
  writeFileSync(
    join(bin, "apt-get"),
    good.replace("#!/bin/sh\n", '#!/bin/sh\ncase "$*" in *rsync*) echo "E: broken" >&2; exit 100 ;; esac\n'),
    {
      mode: 0o755,
    },
  );
  const failed = ensureHostPackages(["rsync"]);
  const next = ensureHostPackages(["kmod"]);
  await t.rejects(failed, /apt-get/);
  t.same(await next, ["kmod"], "the next one installs its own");
});
