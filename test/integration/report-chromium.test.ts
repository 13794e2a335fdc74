// The HTML report in a real browser: the headless Chromium hil finds (Debian's chromium, which `hil
// setup --browser` installs and CI's .ci/run asks for, or Playwright's; this test installs nothing
// and fails without one) draws `hil report --format html --screenshot` of the trimmed run directory. Checked: the DOM
// chromium built (--dump-dom) has each scenario's timeline with its lanes and marks and the hang
// marker on the stuck drain only; chromium's layout puts the timelines on the page at their size;
// the screenshot kept in the run directory is the whole page, not blank, and at the place the
// layout gives for the hang line its pixels are the red dashed line (and the drain that returned
// has no such line). No chromium process and no temporary profile is left behind.
//
// Then a real run with failed rules (hil run on the injected duplicate completion and on the cxgb4
// case's lost flush completion), its report opened in Chromium over the DevTools protocol as a user
// would: the link of a failed rule activated from the keyboard (focus, Enter) and with a click,
// and opened as a URL; each time the rows and marks the page outlines are exactly that rule's WRs
// and completions as the trace has them, and the page has scrolled to them. Print media opens the
// closed event tables. The rerun line the page gives for the failed scenario, run, judges it the
// same way.
import { cpSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import t, { type Test } from "tap";
import {
  type Box,
  decodePng,
  dumpDom,
  type Image,
  measureLayout,
  pixel,
  pngSize,
  SCREENSHOT_WIDTH,
} from "../../harness/report/browser.ts";
import { findChromium } from "../../harness/report/browser-find.ts";
import { readRunRecord } from "../../harness/rundir/read.ts";
import { hil, isolate, leftovers, REPO_ROOT } from "../support/cli.ts";
import { type Page, withPage } from "../support/devtools.ts";

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

/** Chromium's singleton socket directories in the system temp dir (a killed browser leaves its own). */
const socketDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith("org.chromium.Chromium."));
const socketDirsBefore = new Set(socketDirs());

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
  const found = findChromium();
  if (!found) {
    t.fail("no headless Chromium on this machine: hil setup --browser installs Debian's (CI's .ci/run does)");
    return;
  }
  const binary = found.binary;
  t.comment(`chromium: ${binary} (${found.source})`);
  const before = new Set(chromiumProcesses().map((p) => p.pid));

  const runDir = join(t.testdir({ run: {} }), "run");
  cpSync(FIXTURE, runDir, { recursive: true });
  const iso = isolate();
  const r = await hil(["report", runDir, "--format", "html", "--screenshot"], iso.env);
  t.equal(r.exitCode, 0, `hil report --screenshot exits 0\n${r.stderr}`);
  t.match(
    r.stderr,
    /\[report\] drawing the report in headless chromium \([^)]+\): 1400x\d+ px, 3 timeline\(s\)/,
  );
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

type TraceLine = Record<string, unknown>;

function traceOf(runDir: string, scenario: string): TraceLine[] {
  return readFileSync(join(runDir, "traces", `${scenario}.jsonl`), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as TraceLine);
}

/** The trace records that post WR `wrId` of qp's `queue` and the completions of that WR, by index. */
function wrEvents(records: TraceLine[], queue: string, wrId: number): number[] {
  return records.flatMap((r, i) => {
    const posts =
      r.ev === "post" &&
      r.qp === "qp" &&
      r.queue === queue &&
      wrId >= (r.wr_id as number) &&
      wrId < (r.wr_id as number) + (r.count as number);
    const completes = r.ev === "cqe" && r.qp === "qp" && r.queue === queue && r.wr_id === wrId;
    return posts || completes ? [i] : [];
  });
}

interface Shown {
  hash: string;
  /** rows whose cells carry the highlight colour, marks whose shape has the highlight stroke */
  rows: number[];
  marks: number[];
  /** marks drawn dimmed */
  dimmed: number;
  marksInAll: number;
  /** the banner's and the timeline's top in the viewport, and the viewport's height */
  banner: { top: number; height: number };
  timelineTop: number;
  viewport: number;
}

/** What the page shows highlighted in scenario `scope`'s section, read from the computed styles. */
function shown(page: Page, scope: string, anchor: string): Promise<Shown> {
  return page.evaluate<Shown>(`new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
    const s = document.getElementById(${JSON.stringify(scope)});
    const on = (e) => getComputedStyle(e).backgroundColor === "rgb(255, 225, 77)";
    const rows = [...s.querySelectorAll("tr[data-ev]")].filter((r) => on(r.cells[0])).map((r) => Number(r.dataset.ev));
    const marks = [...s.querySelectorAll("g.mark[data-ev]")]
      .filter((g) => getComputedStyle(g.querySelector("rect,circle")).strokeWidth === "3px")
      .map((g) => Number(g.dataset.ev));
    const all = s.querySelectorAll("g.mark");
    const dimmed = [...all].filter((g) => getComputedStyle(g).opacity === "0.2").length;
    const b = document.getElementById(${JSON.stringify(anchor)}).getBoundingClientRect();
    done({ hash: location.hash, rows, marks, dimmed, marksInAll: all.length,
      banner: { top: b.top, height: b.height }, timelineTop: s.querySelector("svg.timeline").getBoundingClientRect().top,
      viewport: innerHeight });
  })))`);
}

function expectHighlight(t: Test, got: Shown, anchor: string, want: number[], how: string): void {
  t.equal(got.hash, `#${anchor}`, `${how}: the URL names the rule`);
  t.same(got.rows, want, `${how}: the outlined rows are exactly the rule's events (${want.join(", ")})`);
  t.same(got.marks, want, `${how}: the outlined marks are exactly the rule's events`);
  t.equal(got.dimmed, got.marksInAll - want.length, `${how}: every other mark is dimmed`);
  t.ok(
    got.banner.height > 20 && got.banner.top >= 0 && got.banner.top < 60,
    `${how}: scrolled to the banner (top ${got.banner.top})`,
  );
  t.ok(
    got.timelineTop > 0 && got.timelineTop < got.viewport,
    `${how}: the timeline is in view (top ${got.timelineTop})`,
  );
}

t.test(
  "a real run: a failed rule's link highlights exactly its WRs and CQEs, and its rerun line reruns it",
  async (t) => {
    const found = findChromium();
    if (!found) {
      t.fail(
        "no headless Chromium on this machine: hil setup --browser installs Debian's (CI's .ci/run does)",
      );
      return;
    }
    const lostCase = join(REPO_ROOT, "fixtures/cases/scenarios/sq-flush-drops-oldest.yaml");
    const root = t.testdir({});
    const runDir = join(root, "run");
    const iso = isolate();
    const args = ["run", "--scenario", `fault-duplicate-cqe,${lostCase}`, "--run-dir", runDir];
    const run = await hil(args, iso.env);
    t.equal(run.exitCode, 1, "a FAIL: the lost completion is no known bug of this run");
    if (run.exitCode !== 1) t.comment(run.stderr.slice(-3000));
    const record = await readRunRecord(runDir);
    t.same(
      record.invocation,
      { argv: args, cwd: REPO_ROOT.replace(/\/$/, "") },
      "verdicts.json records the command line",
    );
    t.equal(
      record.job?.baseDir,
      REPO_ROOT.replace(/\/$/, ""),
      "and the directory the job's paths are relative to",
    );
    const report = await hil(["report", runDir, "--format", "html"], iso.env);
    t.equal(report.exitCode, 0, "hil report exits 0");
    if (report.exitCode !== 0) t.comment(report.stderr);
    const url = pathToFileURL(join(runDir, "report.html")).href;

    const lost = wrEvents(traceOf(runDir, "sq-flush-drops-oldest"), "sq", 1000);
    t.equal(lost.length, 1, "WR 1000: its post, and no completion (the device lost it)");
    const dup = wrEvents(traceOf(runDir, "fault-duplicate-cqe"), "rq", 2003);
    t.equal(dup.length, 3, "WR 2003: its post and its completion written twice");

    const profiles = join(root, "profiles");
    mkdirSync(profiles);
    const rerunLine = await withPage(
      found.binary,
      async (page) => {
        await page.open(url);
        // the keyboard: the link is focusable; Enter follows it
        const lostAnchor = "s-sq-flush-drops-oldest--ib--rule-5";
        const focused = await page.evaluate<string>(
          `(() => { const a = document.querySelector('a.show[href="#${lostAnchor}"]'); a.focus(); return document.activeElement === a ? a.textContent : ""; })()`,
        );
        t.equal(focused, "show its 1 WR (1 post) on the timeline", "the rule's link takes the focus");
        await page.press("Enter");
        expectHighlight(
          t,
          await shown(page, "s-sq-flush-drops-oldest", lostAnchor),
          lostAnchor,
          lost,
          "Enter",
        );
        const rule9 = "s-sq-flush-drops-oldest--linux--rule-9";
        await page.evaluate(`document.querySelector('a.show[href="#${rule9}"]').focus()`);
        await page.press("Enter");
        expectHighlight(
          t,
          await shown(page, "s-sq-flush-drops-oldest", rule9),
          rule9,
          lost,
          "Enter on rule 9",
        );

        // the mouse: a click where the link is drawn (rule 5 broken alike under every rule set is
        // one item, under the first rule set's anchor)
        const dupAnchor = "s-fault-duplicate-cqe--ib--rule-5";
        const at = await page.evaluate<{ x: number; y: number }>(
          `(() => { const a = document.querySelector('a.show[href="#${dupAnchor}"]'); a.scrollIntoView({ block: "center" }); const r = a.getBoundingClientRect(); return { x: r.x + r.width / 2, y: r.y + r.height / 2 }; })()`,
        );
        await page.click(at.x, at.y);
        expectHighlight(t, await shown(page, "s-fault-duplicate-cqe", dupAnchor), dupAnchor, dup, "a click");

        // a shared URL: the page opened at the rule's anchor
        const ibAnchor = "s-fault-duplicate-cqe--ib--rule-5";
        await page.open("about:blank"); // a new document: the same one with another fragment loads nothing
        await page.open(`${url}#${ibAnchor}`);
        expectHighlight(t, await shown(page, "s-fault-duplicate-cqe", ibAnchor), ibAnchor, dup, "the URL");

        // print: the closed tables (the device's events) are laid out and visible
        const hwRowsVisible = `[...document.querySelectorAll("details.events.hw:not([open]) tr[data-hw]")].map((r) => r.checkVisibility())`;
        const onScreen = await page.evaluate<boolean[]>(hwRowsVisible);
        t.ok(
          onScreen.length > 10 && onScreen.every((v) => !v),
          `on screen the ${onScreen.length} rows of the closed tables are hidden`,
        );
        await page.send("Emulation.setEmulatedMedia", { media: "print" });
        const printed = await page.evaluate<boolean[]>(hwRowsVisible);
        t.ok(
          printed.length === onScreen.length && printed.every((v) => v),
          "printed, every row of them shows",
        );
        await page.send("Emulation.setEmulatedMedia", { media: "" });

        return page.evaluate<string>(
          `document.querySelector("#s-sq-flush-drops-oldest .rerun code.cmd").textContent`,
        );
      },
      { tmpRoot: profiles },
    );
    t.same(
      chromiumProcesses().filter((p) => p.home.startsWith(profiles)),
      [],
      "no chromium process left",
    );
    t.same(readdirSync(profiles), [], "its profile directory removed");

    // the rerun line, run: the same verdicts and the same failed rules for that scenario
    t.match(rerunLine, /^hil run [^'"\\$]*$/, "a hil run line with nothing quoted");
    const rerunArgv = rerunLine.split(" ").slice(1);
    t.same(rerunArgv.slice(rerunArgv.indexOf("--scenario")), ["--scenario", lostCase], "that scenario alone");
    const again = join(root, "again");
    const rerun = await hil([...rerunArgv, "--run-dir", again], iso.env);
    t.equal(rerun.exitCode, 1, "the rerun FAILs too");
    if (rerun.exitCode !== 1) t.comment(rerun.stderr.slice(-3000));
    const judged = (rec: typeof record) =>
      rec.scenarios
        ?.filter((s) => s.name === "sq-flush-drops-oldest")
        .flatMap((s) =>
          s.judgements.map(
            (j) =>
              `${j.profile} ${j.verdict}: ${j.rules
                .filter((r) => r.verdict !== "PASS" && r.verdict !== "SKIP")
                .map((r) => `${r.rule} ${r.verdict}`)
                .join(", ")}`,
          ),
        );
    const first = judged(record);
    t.ok(first && first.length === 3, `judged under three rule sets: ${first?.join(" | ")}`);
    t.same(judged(await readRunRecord(again)), first, "the rerun judges it the same way");
    t.same(
      (await readRunRecord(again)).scenarios?.map((s) => s.name),
      ["sq-flush-drops-oldest"],
    );
    t.same(leftovers(iso), { processes: [], entries: [] }, "the runs left no process and no temp file");
  },
);

t.test("no chromium run left its singleton socket directory in the system temp dir", async (t) => {
  t.same(
    socketDirs().filter((n) => !socketDirsBefore.has(n)),
    [],
    "each run's TMPDIR was a directory of its own, removed after it",
  );
});

t.test("a page taller than chromium draws at once is drawn whole, in parts", async (t) => {
  const chromium = findChromium();
  if (!chromium) throw new Error("no headless chromium: hil setup --browser installs Debian's");
  const { screenshotHtml, screenshotPart } = await import("../../harness/report/browser.ts");
  const dir = t.testdir({});
  const html = join(dir, "tall.html");
  const { writeFileSync } = await import("node:fs");
  // three bands of colour, 15000 px each: 45000 px in all, more than the 16384 px of one window
  writeFileSync(
    html,
    `<!DOCTYPE html><html><head><style>body{margin:0}div{height:15000px}</style></head><body><div style="background:#ff0000"></div><div style="background:#00ff00"></div><div style="background:#0000ff"></div></body></html>`,
  );
  const png = join(dir, "tall.png");
  const shot = await screenshotHtml(html, png, { binary: chromium.binary });
  t.equal(shot.files.length, 3, "three parts");
  t.same(shot.files, [png, screenshotPart(png, 1), screenshotPart(png, 2)]);
  const heights = shot.files.map((f) => pngSize(readFileSync(f))?.height ?? 0);
  t.equal(
    heights.reduce((a, b) => a + b, 0),
    shot.height,
    `the parts together are the whole page (${heights.join(" + ")} = ${shot.height})`,
  );
  // the last part starts 2 x 16384 px down the page: inside the third (blue) band
  const last = decodePng(readFileSync(shot.files[2] as string));
  t.same(pixel(last, 10, 10).slice(0, 3), [0, 0, 255], "the last part shows the bottom of the page");
  const first = decodePng(readFileSync(shot.files[0] as string));
  t.same(pixel(first, 10, 10).slice(0, 3), [255, 0, 0], "the first part its top");
  t.same(
    readdirSync(dir).sort(),
    ["tall.html", "tall-2.png", "tall-3.png", "tall.png"].sort(),
    "no shifted copy left",
  );
});
