/**
 * Headless Chromium for the HTML report (which one: browser-find.ts; nothing is installed here),
 * driven as a plain binary: a screenshot of the report (--screenshot), its DOM after
 * the page has loaded (--dump-dom), and the page's layout measured by a small script run in a copy
 * of the report (the report itself has no scripts).
 *
 * Every run gets a fresh profile directory (--user-data-dir) that is removed afterwards, runs in its
 * own process group, and the whole group is killed when the browser exits or the time is up, so no
 * renderer, zygote or crash handler is left behind; a signal to hil does the same.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { inflateSync } from "node:zlib";
import { onProcessExit } from "../../util/cleanup.ts";
import { HilError } from "../../util/errors.ts";
import { CHROMIUM_BINARY } from "./browser-find.ts";

/** The layout width of a screenshot: the timelines are 1140 px wide, plus the page margins. */
export const SCREENSHOT_WIDTH = 1400;
const DEFAULT_TIMEOUT_MS = 60_000;
/** Chromium refuses bitmaps much taller than this; a longer report is cut at the bottom. */
const MAX_HEIGHT = 16_384;
/** The longest temp dir the socket's directory goes in: <dir>/hil-cr-XXXXXX/org.chromium.Chromium.XXXXXX/SingletonSocket fits a socket path. */
const SOCKET_ROOT_MAX = 60;

export interface ChromiumOptions {
  /** the binary (default /usr/bin/chromium) */
  binary?: string;
  /** the whole run, browser start to exit (default 60 s) */
  timeoutMs?: number;
  /** where the temporary profile directory is made (default: the system's temp dir) */
  tmpRoot?: string;
}

export interface ChromiumResult {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** The switches every run uses: headless, no sandbox (hil runs as root), no GPU, a private profile. */
export function chromiumArgs(profileDir: string, extra: readonly string[], url: string): string[] {
  return [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--mute-audio",
    `--user-data-dir=${profileDir}`,
    ...extra,
    url,
  ];
}

/**
 * A chromium run's environment: its profile as HOME and XDG dirs, and as TMPDIR a directory of its
 * own (removed by the caller), where chromium makes its singleton socket's directory, which a killed
 * browser leaves behind; short enough for a UNIX socket path (108 bytes) when the profile is not.
 */
export function chromiumEnv(profileDir: string): { env: NodeJS.ProcessEnv; socketRoot: string } {
  const socketRoot = mkdtempSync(join(tmpdir().length <= SOCKET_ROOT_MAX ? tmpdir() : "/tmp", "hil-cr-"));
  return {
    env: {
      ...process.env,
      HOME: profileDir,
      XDG_CONFIG_HOME: profileDir,
      XDG_CACHE_HOME: profileDir,
      TMPDIR: socketRoot,
    },
    socketRoot,
  };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

/**
 * One chromium run on `url` with `extra` switches. Resolves when the browser has exited (its group
 * killed after it, the profile directory removed); a run that outlasts the timeout is killed, group
 * and all, and becomes a HilError, as does a non-zero exit.
 */
export async function runChromium(
  extra: readonly string[],
  url: string,
  opts: ChromiumOptions = {},
): Promise<ChromiumResult> {
  const binary = opts.binary ?? CHROMIUM_BINARY;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const profileDir = mkdtempSync(join(opts.tmpRoot ?? tmpdir(), "hil-chromium-"));
  const { env, socketRoot } = chromiumEnv(profileDir);
  const args = chromiumArgs(profileDir, extra, url);
  let pid: number | undefined;
  const cleanup = () => {
    killGroup(pid);
    rmSync(profileDir, { recursive: true, force: true });
    rmSync(socketRoot, { recursive: true, force: true });
  };
  const unregister = onProcessExit(cleanup);
  try {
    const child = spawn(binary, args, {
      detached: true, // its own process group: the group is what is killed
      stdio: ["ignore", "pipe", "pipe"],
      env,
    });
    pid = child.pid;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    const closed = new Promise<void>((res) => child.on("close", () => res()));
    let timedOut = false;
    const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res, rej) => {
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(pid);
      }, timeoutMs);
      child.on("error", (e) => {
        clearTimeout(timer);
        rej(new HilError(`cannot start ${binary}`, { detail: e.message, cause: e }));
      });
      child.on("exit", (code, signal) => {
        clearTimeout(timer);
        res({ code, signal });
      });
    });
    // helpers that outlive the browser hold its pipes open: end them, then take the last output
    killGroup(pid);
    await Promise.race([closed, new Promise((res) => setTimeout(res, 5000).unref())]);
    const result: ChromiumResult = {
      stdout: Buffer.concat(out).toString("utf8"),
      stderr: Buffer.concat(err).toString("utf8"),
      exitCode: exit.code,
      signal: exit.signal,
    };
    if (timedOut || exit.code !== 0) {
      const why = timedOut
        ? `timed out after ${timeoutMs} ms and was killed`
        : exit.code === null
          ? `was killed by ${exit.signal}`
          : `exited with status ${exit.code}`;
      throw new HilError(`headless chromium ${why}: ${binary} ${args.join(" ")}`, {
        detail: result.stderr.trim().split("\n").slice(-20).join("\n") || undefined,
      });
    }
    return result;
  } finally {
    cleanup();
    unregister();
  }
}

/** The report as chromium has it once loaded and laid out, serialised (--dump-dom). */
export async function dumpDom(htmlFile: string, opts: ChromiumOptions = {}): Promise<string> {
  const r = await runChromium(
    [`--window-size=${SCREENSHOT_WIDTH},900`, "--dump-dom"],
    pathToFileURL(resolve(htmlFile)).href,
    opts,
  );
  return r.stdout;
}

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where chromium laid out the page and its timelines, in CSS px from the page's top left. */
export interface PageLayout {
  width: number;
  height: number;
  timelines: Array<{ id: string; box: Box; lanes: number; marks: number }>;
  /** each timeline's hang line (the red dashed line at the point the watchdog noticed the hang) */
  hangMarkers: Array<{ timeline: string; op: string; box: Box }>;
}

const LAYOUT_ATTR = "data-hil-layout";
const LAYOUT_SCRIPT = `<script>
(() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return { x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height }; };
  const d = document.documentElement;
  const layout = {
    width: Math.max(d.scrollWidth, document.body.scrollWidth),
    height: Math.max(d.scrollHeight, document.body.scrollHeight),
    timelines: [...document.querySelectorAll("svg.timeline")].map((s) => ({ id: s.id, box: box(s), lanes: s.querySelectorAll("g.lane").length, marks: s.querySelectorAll("g.mark").length })),
    hangMarkers: [...document.querySelectorAll("svg.timeline g.hang-marker")].map((g) => ({ timeline: g.closest("svg").id, op: g.getAttribute("data-op"), box: box(g.querySelector("line")) })),
  };
  d.setAttribute("${LAYOUT_ATTR}", encodeURIComponent(JSON.stringify(layout)));
})();
</script>`;

/** Lays the report out in chromium (a copy with a measuring script added) and returns the boxes. */
export async function measureLayout(
  html: string,
  opts: ChromiumOptions & { width?: number } = {},
): Promise<PageLayout> {
  const dir = mkdtempSync(join(opts.tmpRoot ?? tmpdir(), "hil-layout-"));
  try {
    const file = join(dir, "measure.html");
    const at = html.lastIndexOf("</body>");
    await writeFile(
      file,
      at >= 0 ? `${html.slice(0, at)}${LAYOUT_SCRIPT}${html.slice(at)}` : html + LAYOUT_SCRIPT,
    );
    const r = await runChromium(
      [`--window-size=${opts.width ?? SCREENSHOT_WIDTH},900`, "--dump-dom"],
      pathToFileURL(file).href,
      opts,
    );
    const m = new RegExp(`${LAYOUT_ATTR}="([^"]*)"`).exec(r.stdout);
    if (!m?.[1]) throw new HilError("headless chromium did not lay the report out (no layout in its DOM)");
    return JSON.parse(decodeURIComponent(m[1])) as PageLayout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ScreenshotResult {
  /** the PNGs, top to bottom: one, or several for a page taller than chromium draws at once */
  files: string[];
  width: number;
  /** the page's height, all parts together */
  height: number;
  layout: PageLayout;
}

/** The file of part k (0-based) of a screenshot: the file itself, then <name>-2.png, <name>-3.png ... */
export function screenshotPart(file: string, k: number): string {
  if (k === 0) return file;
  return /\.png$/.test(file) ? file.replace(/\.png$/, `-${k + 1}.png`) : `${file}-${k + 1}`;
}

/**
 * A PNG of the whole report: the page is laid out once to learn its height, then drawn in a
 * window that tall, so every timeline is in the picture. A page taller than chromium's window
 * (MAX_HEIGHT) is drawn in parts, each a copy of the page moved up by the parts before it.
 */
export async function screenshotHtml(
  htmlFile: string,
  pngFile: string,
  opts: ChromiumOptions = {},
): Promise<ScreenshotResult> {
  const html = await readFile(htmlFile, "utf8");
  const layout = await measureLayout(html, opts);
  const total = Math.max(200, Math.ceil(layout.height));
  const parts = Math.ceil(total / MAX_HEIGHT);
  const files: string[] = [];
  let width = SCREENSHOT_WIDTH;
  for (let k = 0; k < parts; k++) {
    const height = Math.min(MAX_HEIGHT, total - k * MAX_HEIGHT);
    const file = resolve(screenshotPart(pngFile, k));
    const shifted = k === 0 ? undefined : `${resolve(htmlFile)}.part${k + 1}.html`;
    if (shifted) {
      const style = `<style>html{margin-top:-${k * MAX_HEIGHT}px !important}</style>`;
      const at = html.indexOf("</head>");
      await writeFile(shifted, at >= 0 ? `${html.slice(0, at)}${style}${html.slice(at)}` : style + html);
    }
    try {
      await runChromium(
        [`--window-size=${SCREENSHOT_WIDTH},${height}`, `--screenshot=${file}`],
        pathToFileURL(shifted ?? resolve(htmlFile)).href,
        opts,
      );
    } finally {
      if (shifted) rmSync(shifted, { force: true });
    }
    const size = pngSize(await readFile(file).catch(() => Buffer.alloc(0)));
    if (!size) throw new HilError("headless chromium wrote no PNG screenshot", { where: file });
    width = size.width;
    files.push(file);
  }
  return { files, width, height: total, layout };
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG's width and height from its IHDR; undefined when it is not a PNG. */
export function pngSize(png: Buffer): { width: number; height: number } | undefined {
  if (
    png.length < 24 ||
    !png.subarray(0, 8).equals(PNG_SIGNATURE) ||
    png.toString("latin1", 12, 16) !== "IHDR"
  )
    return undefined;
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

export interface Image {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel, row by row */
  data: Uint8Array;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Decodes an 8-bit non-interlaced PNG (greyscale, RGB, greyscale+alpha, RGBA) to RGBA. */
export function decodePng(png: Buffer): Image {
  const size = pngSize(png);
  if (!size) throw new HilError("not a PNG");
  const bitDepth = png[24];
  const colourType = png[25];
  const interlace = png[28];
  const channels = ({ 0: 1, 2: 3, 4: 2, 6: 4 } as Record<number, number>)[colourType ?? -1];
  if (bitDepth !== 8 || channels === undefined || interlace !== 0)
    throw new HilError(
      `unsupported PNG: bit depth ${bitDepth}, colour type ${colourType}, interlace ${interlace}`,
    );
  const idat: Buffer[] = [];
  for (let off = 8; off + 8 <= png.length; ) {
    const len = png.readUInt32BE(off);
    const type = png.toString("latin1", off + 4, off + 8);
    if (type === "IDAT") idat.push(png.subarray(off + 8, off + 8 + len));
    if (type === "IEND") break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const { width, height } = size;
  const stride = width * channels;
  if (raw.length < height * (stride + 1)) throw new HilError("truncated PNG image data");
  const cur = new Uint8Array(stride);
  let prev = new Uint8Array(stride);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const row = y * (stride + 1);
    const filter = raw[row];
    for (let i = 0; i < stride; i++) {
      const x = raw[row + 1 + i] as number;
      const a = i >= channels ? (cur[i - channels] as number) : 0;
      const b = prev[i] as number;
      const c = i >= channels ? (prev[i - channels] as number) : 0;
      let v: number;
      switch (filter) {
        case 0:
          v = x;
          break;
        case 1:
          v = x + a;
          break;
        case 2:
          v = x + b;
          break;
        case 3:
          v = x + ((a + b) >> 1);
          break;
        case 4:
          v = x + paeth(a, b, c);
          break;
        default:
          throw new HilError(`bad PNG filter type ${filter} in row ${y}`);
      }
      cur[i] = v & 0xff;
    }
    for (let px = 0; px < width; px++) {
      const o = (y * width + px) * 4;
      const s = px * channels;
      if (channels <= 2) {
        const g = cur[s] as number;
        data.set([g, g, g, channels === 2 ? (cur[s + 1] as number) : 255], o);
      } else
        data.set(
          [
            cur[s] as number,
            cur[s + 1] as number,
            cur[s + 2] as number,
            channels === 4 ? (cur[s + 3] as number) : 255,
          ],
          o,
        );
    }
    prev = Uint8Array.from(cur);
  }
  return { width, height, data };
}

/** The pixel at (x, y) as [r, g, b, a]. */
export function pixel(img: Image, x: number, y: number): [number, number, number, number] {
  const o = (y * img.width + x) * 4;
  return [img.data[o] ?? 0, img.data[o + 1] ?? 0, img.data[o + 2] ?? 0, img.data[o + 3] ?? 0];
}
