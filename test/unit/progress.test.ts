import t from "tap";
import { Progress, renderBar } from "../../util/progress.ts";

function sink(isTTY: boolean) {
  const out: string[] = [];
  return { out, sink: { write: (s: string) => void out.push(s), isTTY } };
}

t.test("renderBar shows fill and percent", async (t) => {
  t.equal(renderBar(0.5, 10), "[#####-----]  50%");
  t.equal(renderBar(1, 4), "[####] 100%");
});

t.test("non-TTY output is throttled to lines, with start and end always printed", async (t) => {
  const { out, sink: s } = sink(false);
  const step = new Progress(s, 60_000).step("[build] qemu");
  for (let i = 1; i <= 100; i++) step.update(i, 100);
  step.succeed();
  t.equal(out.length, 2, "start and end only within the interval");
  t.match(out[0] ?? "", /^\[build\] qemu \.\.\.\n$/);
  t.match(out[1] ?? "", /^\[build\] qemu: done in \d+s\n$/);
});

t.test("non-TTY output prints updates once the interval has passed", async (t) => {
  const { out, sink: s } = sink(false);
  const step = new Progress(s, 0).step("[kernel]");
  step.update(3, 10, "CC init/main.o");
  t.match(out.at(-1) ?? "", /\[kernel\] \[#######-+\]\s+30% 3\/10 CC init\/main\.o/);
  step.fail("broke");
  t.match(out.at(-1) ?? "", /\[kernel\]: broke after/);
});

t.test("TTY output redraws one line", async (t) => {
  const { out, sink: s } = sink(true);
  const step = new Progress(s).step("x");
  step.update(1);
  step.succeed();
  t.ok(out.every((l) => l.startsWith("\r\x1b[2K")));
  t.ok(out.at(-1)?.endsWith("\n"));
});
