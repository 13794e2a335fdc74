// The HTML report in a real browser: Debian's chromium (installed by ensureChromium when missing)
// draws `hil report --format html --screenshot` of the trimmed run directory. Checked: the DOM
// chromium built (--dump-dom) has each scenario's timeline with its lanes and marks and the hang
// marker on the stuck drain only; chromium's layout puts the timelines on the page at their size;
// the screenshot kept in the run directory is the whole page, not blank, and at the place the
// layout gives for the hang line its pixels are the red dashed line (and the drain that returned
// has no such line). No chromium process and no temporary profile is left behind.
import { cpSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import {
  type Box,
  decodePng,
  dumpDom,
  ensureChromium,
  type Image,
  measureLayout,
  pixel,
  pngSize,
  SCREENSHOT_WIDTH,
} from "../../harness/report/browser.ts";
import { hil, isolate, leftovers } from "../support/cli.ts";

t.setTimeout(10 * 60 * 1000);

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const SCENARIOS = ["drain-sq-idle", "fault-stall-sq-drain", "partial-post-rq-overflow"];

/** Chromium processes (by executable) and the HOME each runs with (its profile dir, set by runChromium). */
function chromiumProcesses(): Array<{ pid: number; home: string }> {
  const found: Array<{ pid: number; home: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!cmd.includes("chromium")) continue;
      const env = readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      found.push({ pid: Number(name), home: env.find((e) => e.startsWith("HOME="))?.slice(5) ?? "" });
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

function svgOf(dom: string, scenario: string): string {
  return new RegExp(`<svg[^>]*id="timeline-${scenario}"[\\s\\S]*?</svg>`).exec(dom)?.[0] ?? "";
}

const isRed = ([r, g, b]: number[]) => (r ?? 0) > 170 && (g ?? 0) < 70 && (b ?? 0) < 70;

/** The most red pixels any single column of `box` has, and that column's x. */
function reddestColumn(img: Image, box: Box): { x: number; red: number; height: number } {
  const [x0, x1] = [Math.floor(box.x), Math.ceil(box.x + box.width)];
  const [y0, y1] = [Math.floor(box.y), Math.min(img.height, Math.ceil(box.y + box.height))];
  let best = { x: x0, red: 0, height: y1 - y0 };
  for (let x = x0; x <= x1; x++) {
    let red = 0;
    for (let y = y0; y < y1; y++) if (isRed(pixel(img, x, y))) red++;
    if (red > best.red) best = { x, red, height: y1 - y0 };
  }
  return best;
}

t.test("the HTML report drawn by headless chromium", async (t) => {
  const started = Date.now();
  const binary = await ensureChromium();
  t.comment(`chromium ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${binary}`);
  const before = new Set(chromiumProcesses().map((p) => p.pid));

  const runDir = join(t.testdir({ run: {} }), "run");
  cpSync(FIXTURE, runDir, { recursive: true });
  const iso = isolate();
  const r = await hil(["report", runDir, "--format", "html", "--screenshot"], iso.env);
  t.equal(r.exitCode, 0, `hil report --screenshot exits 0\n${r.stderr}`);
  t.match(r.stderr, /\[report\] drawing the report in headless chromium: 1400x\d+ px, 3 timeline\(s\)/);
  t.match(r.stderr, `[report] screenshot: ${join(runDir, "report.png")}`);
  t.match(r.stderr, /hil: 9 passed, 0 failed, 6 xfail/, "the summary line still ends it");
  t.same(leftovers(iso), { processes: [], entries: [] }, "hil report left no process and no temp file");
  const htmlFile = join(runDir, "report.html");
  const html = readFileSync(htmlFile, "utf8");

  await t.test("the DOM chromium built has the timelines", async (t) => {
    const tmpRoot = t.testdir({});
    const dom = await dumpDom(htmlFile, { binary, tmpRoot });
    t.match(dom, /<body>/, "a whole document");
    t.equal((dom.match(/<svg [^>]*class="timeline"/g) ?? []).length, 3, "three timelines");
    for (const s of SCENARIOS) {
      const svg = svgOf(dom, s);
      t.ok(svg.length > 0, `${s}: its timeline`);
      const marks = (svg.match(/<g class="mark /g) ?? []).length;
      t.equal(marks, (svgOf(html, s).match(/<g class="mark /g) ?? []).length, `${s}: every mark parsed`);
      t.ok(marks >= 10, `${s}: ${marks} marks`);
    }
    const stall = svgOf(dom, "fault-stall-sq-drain");
    const lanes = [...stall.matchAll(/<g class="lane" data-lane="([^"]+)"/g)].map((m) => m[1]);
    t.same(lanes, ["state", "rq", "rq-cqe", "drain", "hw-queue", "hw-event"], "the stuck scenario's lanes");
    t.match(stall, /<g class="hang-marker" data-op="drain"><line /, "the hang marker");
    t.match(stall, /HANG: drain \(step 3\) did not return within 8242 ms/);
    for (const kind of ["post", "cqe-flush", "hang", "hw-fault", "hw-reflush"])
      t.match(stall, `data-kind="${kind}"`, `a ${kind} mark`);
    t.notMatch(svgOf(dom, "drain-sq-idle"), /hang-marker/, "no hang marker where the drain returned");
    t.notMatch(svgOf(dom, "partial-post-rq-overflow"), /hang-marker/);
    t.same(readdirSync(tmpRoot), [], "the profile dir is gone");
  });

  await t.test("the screenshot kept in the run directory shows them", async (t) => {
    const tmpRoot = t.testdir({});
    const layout = await measureLayout(html, { binary, tmpRoot });
    t.same(readdirSync(tmpRoot), [], "the profile and the measuring copy are gone");
    t.same(
      layout.timelines.map((x) => x.id),
      SCENARIOS.map((s) => `timeline-${s}`),
    );
    for (const tl of layout.timelines) {
      t.ok(tl.box.width >= 1140 && tl.box.width <= 1150, `${tl.id} drawn ${tl.box.width} px wide`);
      t.ok(tl.box.height >= 150, `${tl.id} drawn ${tl.box.height} px high`);
      const src = svgOf(html, tl.id.replace(/^timeline-/, ""));
      t.same(
        [tl.lanes, tl.marks],
        [(src.match(/<g class="lane"/g) ?? []).length, (src.match(/<g class="mark /g) ?? []).length],
        `${tl.id}: ${tl.lanes} lanes, ${tl.marks} marks laid out, as the report has them`,
      );
      t.ok(tl.lanes >= 4 && tl.marks >= 10);
    }
    t.equal(layout.hangMarkers.length, 1, "one hang line");
    const hang = layout.hangMarkers[0];
    t.equal(hang?.timeline, "timeline-fault-stall-sq-drain");
    t.ok((hang?.box.height ?? 0) > 100, "the hang line crosses the lanes");

    const png = readFileSync(join(runDir, "report.png"));
    const size = pngSize(png);
    t.same(size, { width: SCREENSHOT_WIDTH, height: Math.ceil(layout.height) }, "the whole page");
    t.ok(layout.height > 1500, `a tall page (${layout.height} px)`);
    const img = decodePng(png);

    // not blank: many colours, a fair share of the page not white
    const colours = new Set<number>();
    let inked = 0;
    for (let i = 0; i < img.data.length; i += 4) {
      const [r, g, b] = [img.data[i] ?? 0, img.data[i + 1] ?? 0, img.data[i + 2] ?? 0];
      colours.add((r << 16) | (g << 8) | b);
      if (r + g + b < 720) inked++;
    }
    const share = inked / (img.width * img.height);
    t.ok(colours.size > 100, `${colours.size} colours`);
    t.ok(share > 0.03, `${(share * 100).toFixed(1)}% of the page is not white`);

    // the hang line: a red dashed column where chromium laid it out (5 px on, 3 off)
    const line = reddestColumn(img, hang?.box ?? { x: 0, y: 0, width: 0, height: 0 });
    t.ok(line.red / line.height > 0.5, `${line.red} of ${line.height} px of the hang line are red`);
    // the drain that returned: no such line across its timeline
    const idle = layout.timelines.find((x) => x.id === "timeline-drain-sq-idle");
    const idleCol = reddestColumn(img, idle?.box ?? { x: 0, y: 0, width: 0, height: 0 });
    t.ok(
      idleCol.red < 30,
      `no red line across the returned drain's timeline (at most ${idleCol.red} red px a column)`,
    );
    // the lanes: the stuck timeline's marks in their colours
    const stall = layout.timelines.find((x) => x.id === "timeline-fault-stall-sq-drain")?.box;
    const seen = new Set<string>();
    const want: Record<string, [number, number, number]> = {
      post: [0x34, 0x65, 0xa4],
      "cqe-flush": [0xf5, 0xa6, 0x23],
      "hw-reflush": [0xc1, 0x7d, 0x11],
    };
    if (stall)
      for (let y = Math.floor(stall.y); y < stall.y + stall.height; y++)
        for (let x = Math.floor(stall.x); x < stall.x + stall.width; x++) {
          const p = pixel(img, x, y);
          for (const [k, c] of Object.entries(want))
            if (c.every((v, i) => Math.abs(v - (p[i] ?? 0)) <= 6)) seen.add(k);
        }
    t.same(
      [...seen].sort(),
      Object.keys(want).sort(),
      "posts, flush CQEs and REFLUSH drawn in their colours",
    );
  });

  const left = chromiumProcesses().filter((p) => !before.has(p.pid));
  t.same(left, [], "no chromium process left");
});

t.test("--screenshot is for the HTML report", async (t) => {
  const iso = isolate();
  const r = await hil(["report", FIXTURE, "--format", "ktap", "--screenshot"], iso.env);
  t.equal(r.exitCode, 2);
  t.match(r.stderr, /--screenshot draws the HTML report: use it with --format html, not ktap/);
  t.equal(r.stdout, "", "no report written");
});
