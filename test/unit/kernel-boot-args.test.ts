// A KASAN kernel gets longer boot limits (it reaches SSH after 100 s or more under TCG); other
// kernels boot with the launcher's defaults.
import { join } from "node:path";
import t from "tap";
import { parseConsole } from "../../harness/console/parse.ts";
import { isSlowBootWait } from "../../harness/console/slow-boot.ts";
import { kernelBootLimits } from "../../harness/kernel/boot-args.ts";

t.test("longer boot limits for a KASAN kernel only", async (t) => {
  const dir = t.testdir({
    kasan: "CONFIG_64BIT=y\nCONFIG_KASAN=y\nCONFIG_KASAN_GENERIC=y\n",
    plain: "CONFIG_64BIT=y\n# CONFIG_KASAN is not set\nCONFIG_HAVE_ARCH_KASAN=y\n",
  });
  t.same(kernelBootLimits({ config: join(dir, "kasan") }), { bootTimeoutMs: 480_000, stallMs: 180_000 });
  t.same(kernelBootLimits({ config: join(dir, "plain") }), {}, "the launcher's defaults");
  t.same(
    kernelBootLimits({ config: join(dir, "missing") }),
    {},
    "an artifact without its config boots as before",
  );
});

t.test("init waiting for the initramfs is a slow boot; any other hung task is not", async (t) => {
  const report = (fn: string) =>
    [
      "[   48.468219] INFO: task swapper:1 blocked for more than 10 seconds.",
      "[   48.476718] task:swapper         state:D stack:0     pid:1     tgid:1     ppid:0      flags:0x00004000",
      "[   48.478927] Call Trace:",
      "[   48.484551]  <TASK>",
      "[   48.485368]  __schedule+0x67a/0x6c8",
      "[   48.493809]  async_synchronize_cookie_domain+0xc0/0xf4",
      `[   48.501966]  ${fn}+0x38/0x3b`,
      "[   48.502442]  do_one_initcall+0xbd/0x1c6",
      "[   48.517313]  </TASK>",
    ].join("\n");
  const [slow] = parseConsole(report("populate_rootfs"));
  const [other] = parseConsole(report("erdma_probe"));
  t.ok(slow && isSlowBootWait(slow), "populate_rootfs: a slow boot");
  t.notOk(other && isSlowBootWait(other), "a driver's probe blocked: a finding");
  const [stale] = parseConsole(report("? populate_rootfs"));
  t.notOk(stale && isSlowBootWait(stale), "a stale '?' frame is no evidence");
});
