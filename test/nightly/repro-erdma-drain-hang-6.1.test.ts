// hil repro end to end, as a user types it: the Linux 6.1 erdma drain hang on erdma-2022 hardware
// (real QEMU, the real 6.1 driver, the in-kernel executor) REPRODUCES with the hung task's stack
// quoted, exit 0, a run directory with repro.json, and nothing left running.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { parseBlockedTasks } from "../../harness/console/parse.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(8 * 60 * 1000);

t.test("hil repro erdma-drain-hang-6.1: REPRODUCES, with the stack", async (t) => {
  const iso = isolate();
  const dir = join(t.testdir({}), "run");
  const started = Date.now();
  const r = await hil(["repro", "erdma-drain-hang-6.1", "--run-dir", dir], iso.env);
  t.equal(r.exitCode, 0, `${r.stdout}${r.stderr}`.slice(-4000));
  t.match(
    r.stdout,
    /^case erdma-drain-hang-6\.1: Linux 6\.1 erdma on erdma-2022 hardware hangs in ib_drain_qp/m,
  );
  t.match(r.stdout, /^\[ok\] drain-qp-idle\[linux\]: FAIL \(expected FAIL\)/m);
  t.match(r.stdout, /^ {7}rule hang: FAIL \(expected FAIL\)$/m);
  t.match(
    r.stdout,
    /^ {7}evidence \/__ib_drain_sq\/: stack: \[<0>\] __ib_drain_sq\+0x/m,
    "the stuck task's stack",
  );
  t.match(
    r.stdout,
    /^hil repro: erdma-drain-hang-6\.1: REPRODUCES \(5\/5 expected verdicts seen\) in \d+s$/m,
  );
  t.match(r.stderr, /\[suite\] 2 scenario\(s\) on erdma, kernel executor/, "progress on stderr");
  const out = JSON.parse(readFileSync(join(dir, "repro.json"), "utf8"));
  t.equal(out.word, "REPRODUCES");
  t.equal(out.release.startsWith("6.1."), true, out.release);
  t.ok(out.checks.every((c: { met: boolean }) => c.met));
  const verdicts = JSON.parse(readFileSync(join(dir, "verdicts.json"), "utf8"));
  t.equal(verdicts.job.id, "erdma-drain-hang-6.1");
  t.equal(verdicts.deviceProfile, "erdma-2022");
  t.ok(verdicts.boots >= 2, "the hung guest ran nothing more: the other scenario had a guest of its own");

  // ORC stacks (guest/kconfig/base.config): the real call chain, no stale words from the stack
  const stuck = verdicts.scenarios
    .find((s: { name: string }) => s.name === "drain-qp-idle")
    ?.observations?.find((o: { ev: string }) => o.ev === "stuck");
  const frames = [...String(stuck?.stack).matchAll(/^\[<0>\] ([\w.]+)\+0x([0-9a-f]+)\/0x([0-9a-f]+)/gm)].map(
    (m) => ({
      fn: m[1] as string,
      offset: Number.parseInt(m[2] as string, 16),
      size: Number.parseInt(m[3] as string, 16),
    }),
  );
  const fns = frames.map((f) => f.fn);
  const chain = ["__ib_drain_sq", "ib_drain_qp", "hil_port_drain", "hil_op_drain", "kv_worker", "kthread"];
  t.same(
    fns.filter((fn) => chain.includes(fn)),
    chain,
    `the drain's call chain, in order, each once (/proc stack: ${fns.join(" < ")})`,
  );
  t.same(
    frames.filter((f) => f.offset >= f.size).map((f) => f.fn),
    [],
    "every frame a return address inside its function (a guess lands on function ends)",
  );
  t.same(
    fns.filter((fn, i) => fns.indexOf(fn) !== i),
    [],
    "no function twice (the drain does not recurse)",
  );
  const consoleText = readFileSync(join(dir, "console.log"), "utf8");
  const blocked = parseBlockedTasks(consoleText).filter((b) => b.process.comm === "hil_kverbs");
  t.ok(blocked.length > 0, "sysrq-w showed the stuck worker on the console", {
    stderr: r.stderr.split("\n").filter((l) => l.includes("[kverbs]")),
    consoleTail: consoleText.split("\n").slice(-60),
  });
  // ORC prints the text addresses it finds beside the frames it walked, marked "?": the walked
  // ones carry the drain's chain
  for (const b of blocked)
    t.same(
      b.frames.filter((f) => f.reliable && chain.includes(f.fn)).map((f) => f.fn),
      chain,
      `the console's stack of hil_kverbs (line ${b.line}) walks the drain's chain, no "?" on it`,
    );
  t.same(leftovers(iso), { processes: [], entries: [] }, "nothing left behind");
  t.comment(`repro wall time ${Math.round((Date.now() - started) / 1000)}s`);
});
