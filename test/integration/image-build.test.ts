import { readFileSync } from "node:fs";
import t from "tap";
import { listCpio } from "../../harness/image/cpio.ts";
import { buildInitramfs } from "../../harness/image/initramfs.ts";
import { buildKernel } from "../../harness/kernel/build.ts";

t.setTimeout(60 * 60 * 1000);

t.test("the debian:6.12 initramfs holds userspace, init and this kernel's modules", async (t) => {
  const kernel = await buildKernel({ base: "debian:6.12", configs: [] });
  const first = await buildInitramfs(kernel);
  // the layers' archives end to end, uncompressed (composeInitramfs); listCpio reads every one
  const image = readFileSync(first.path);
  t.equal(image.toString("ascii", 0, 6), "070701", "an uncompressed newc archive first");
  const listing = listCpio(image).map((e) => e.path);
  const has = (p: string) => listing.includes(p);
  for (const p of [
    "init",
    "bin/busybox",
    "usr/sbin/dropbear",
    "usr/bin/ibv_devinfo",
    "usr/bin/rdma",
    "usr/bin/ib_send_bw",
    "usr/bin/rping",
    "etc/libibverbs.d/erdma.driver",
    "etc/ld.so.cache",
    "dev/console",
    `lib/modules/${kernel.release}/modules.dep`,
  ]) {
    t.ok(has(p), `has ${p}`);
  }
  t.ok(
    listing.some((p) => p.startsWith(`lib/modules/${kernel.release}/`) && p.endsWith("/erdma.ko")),
    "has erdma.ko",
  );
  t.notOk(
    listing.some((p) => p.startsWith("usr/share/doc/")),
    "documentation is pruned",
  );
  // every boot unpacks the image: what nothing in the guest loads is left out
  for (const p of [
    "usr/lib/x86_64-linux-gnu/libcrypto.so.3",
    "usr/lib/x86_64-linux-gnu/libdb-5.3.so",
    "usr/sbin/arpd",
  ]) {
    t.notOk(has(p), `leaves out ${p}`);
  }
  t.ok(has("lib/x86_64-linux-gnu/libgcc_s.so.1"), "keeps libgcc_s, which glibc opens by name");
  t.ok(
    listing.some((p) => /^usr\/lib\/x86_64-linux-gnu\/libmlx5\.so\.1\./.test(p)),
    "keeps a library only a provider's link in libibverbs/ reaches",
  );

  const started = Date.now();
  const again = await buildInitramfs(kernel);
  const warmMs = Date.now() - started;
  t.same(again, first, "a second build finds everything cached");
  t.comment(`warm build: ${warmMs} ms`);
  t.ok(warmMs < 15_000, "the warm path rebuilds nothing");
});
