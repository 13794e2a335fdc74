// The headless-chromium driver without chromium: which browser is used (found, never installed: the
// user's $HIL_CHROMIUM, Debian's, Playwright's cache, and the error naming how to get one), the PNG
// reader (every filter type, RGB and RGBA, checked pixel for pixel against images encoded here),
// the switches, and the process handling
// with a stand-in browser (a shell script with a child of its own): the whole process group killed
// on timeout and after a normal exit, the temporary profile directory removed, a failure reported.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { deflateSync } from "node:zlib";
import t from "tap";
import { chromiumArgs, decodePng, pixel, pngSize, runChromium } from "../../harness/report/browser.ts";
import {
  BROWSER_HOST_PACKAGES,
  CHROMIUM_BINARY,
  CHROMIUM_PACKAGE,
  findChromium,
  requireChromium,
} from "../../harness/report/browser-find.ts";
import { setupPackages } from "../../harness/setup.ts";
import { HilError } from "../../util/errors.ts";
import { processExists } from "../support/guest.ts";

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Encodes `pixels` (channels bytes a pixel) as a PNG, row y filtered with filter type y % 5. */
function encodePng(width: number, height: number, channels: 3 | 4, pixels: Uint8Array): Buffer {
  const stride = width * channels;
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const filter = y % 5;
    const row = Buffer.alloc(stride + 1);
    row[0] = filter;
    for (let i = 0; i < stride; i++) {
      const x = pixels[y * stride + i] as number;
      const a = i >= channels ? (pixels[y * stride + i - channels] as number) : 0;
      const b = y > 0 ? (pixels[(y - 1) * stride + i] as number) : 0;
      const c = y > 0 && i >= channels ? (pixels[(y - 1) * stride + i - channels] as number) : 0;
      const p = a + b - c;
      const pred = [
        0,
        a,
        b,
        (a + b) >> 1,
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c,
      ][filter] as number;
      row[i + 1] = (x - pred) & 0xff;
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = channels === 4 ? 6 : 2;
  const idat = deflateSync(Buffer.concat(rows));
  // split the image data over two IDAT chunks, as encoders do for big images
  const half = Math.floor(idat.length / 2);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", idat.subarray(0, half)),
    chunk("IDAT", idat.subarray(half)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function noise(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

t.test("the PNG reader decodes what was encoded, every filter type", async (t) => {
  for (const channels of [3, 4] as const) {
    const [w, h] = [13, 11];
    const src = noise(w * h * channels, channels);
    const png = encodePng(w, h, channels, src);
    t.same(pngSize(png), { width: w, height: h }, `size, ${channels} channels`);
    const img = decodePng(png);
    t.equal(img.data.length, w * h * 4);
    let wrong = 0;
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) {
        const want = [...src.subarray((y * w + x) * channels, (y * w + x + 1) * channels)];
        if (channels === 3) want.push(255);
        if (pixel(img, x, y).join() !== want.join()) wrong++;
      }
    t.equal(wrong, 0, `every pixel right, ${channels} channels`);
  }
  t.equal(pngSize(Buffer.from("GIF89a this is not a png at all")), undefined);
  t.throws(() => decodePng(Buffer.from("not a png")), HilError);
  const bad = encodePng(2, 2, 3, new Uint8Array(12));
  bad[24] = 16; // bit depth 16
  t.throws(() => decodePng(bad), /unsupported PNG: bit depth 16/);
});

t.test("the package, the binary and the switches", async (t) => {
  t.equal(CHROMIUM_PACKAGE, "chromium");
  t.equal(CHROMIUM_BINARY, "/usr/bin/chromium");
  t.same([...BROWSER_HOST_PACKAGES], ["chromium"]);
  const args = chromiumArgs("/tmp/p", ["--dump-dom"], "file:///x.html");
  for (const a of ["--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=/tmp/p", "--dump-dom"])
    t.ok(args.includes(a), a);
  t.equal(args.at(-1), "file:///x.html", "the page comes last");
});

/** A stand-in browser: records its pid, its HOME (the profile dir) and its child's pid, then does `body`. */
function fakeBrowser(dir: string, body: string): string {
  const file = join(dir, "fake-chromium");
  writeFileSync(
    file,
    `#!/bin/sh\necho $$ > "${dir}/self"\necho "$HOME" > "${dir}/home"\nsleep 300 &\necho $! > "${dir}/child"\n${body}\n`,
  );
  chmodSync(file, 0o755);
  return file;
}

function pidOf(file: string): number {
  return Number(readFileSync(file, "utf8").trim());
}

async function gone(pid: number, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (processExists(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

t.test("a browser that hangs is killed with its children, its profile removed", async (t) => {
  const root = t.testdir({ bin: {}, tmp: {} });
  const [dir, tmpRoot] = [join(root, "bin"), join(root, "tmp")];
  const binary = fakeBrowser(dir, "wait");
  const started = Date.now();
  await t.rejects(runChromium(["--dump-dom"], "file:///x.html", { binary, timeoutMs: 700, tmpRoot }), {
    message: /timed out after 700 ms and was killed/,
  });
  t.ok(Date.now() - started < 6000, "the timeout ended it");
  const home = readFileSync(join(dir, "home"), "utf8").trim();
  t.match(home, new RegExp(`^${tmpRoot}/hil-chromium-`), "the browser ran with a private profile dir");
  t.notOk(existsSync(home), "the profile dir is removed");
  t.same(readdirSync(tmpRoot), [], "nothing left in the temp root");
  t.ok(await gone(pidOf(join(dir, "self"))), "the browser is gone");
  t.ok(await gone(pidOf(join(dir, "child"))), "its child (same process group) is gone");
});

t.test("a browser that exits leaves no child behind; its output is returned", async (t) => {
  const root = t.testdir({ bin: {}, tmp: {} });
  const [dir, tmpRoot] = [join(root, "bin"), join(root, "tmp")];
  const binary = fakeBrowser(dir, 'echo "<html>$*</html>"\nexit 0');
  const r = await runChromium(["--dump-dom"], "file:///page.html", { binary, timeoutMs: 10_000, tmpRoot });
  t.match(r.stdout, /^<html>.*--no-sandbox.*--dump-dom file:\/\/\/page\.html<\/html>/);
  t.equal(r.exitCode, 0);
  t.ok(await gone(pidOf(join(dir, "child"))), "the helper it left running is killed");
  t.same(readdirSync(tmpRoot), [], "the profile dir is removed");
});

t.test("a browser that fails is an error with its last output", async (t) => {
  const root = t.testdir({ bin: {}, tmp: {} });
  const [dir, tmpRoot] = [join(root, "bin"), join(root, "tmp")];
  const binary = fakeBrowser(dir, 'echo "cannot open display" >&2\nexit 3');
  const err = await runChromium([], "file:///x.html", { binary, timeoutMs: 10_000, tmpRoot }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof HilError, "a HilError");
  t.match((err as HilError).message, /exited with status 3/);
  t.match((err as HilError).detail, /cannot open display/, "with the browser's last words");
  t.ok(await gone(pidOf(join(dir, "child"))));
  t.same(readdirSync(tmpRoot), []);
  await t.rejects(
    runChromium([], "file:///x.html", { binary: join(dir, "no-such-browser"), tmpRoot }),
    /cannot start/,
  );
  t.same(readdirSync(tmpRoot), [], "no profile dir left when the browser cannot start");
});

/** An executable stand-in at `path` (made with its directories). */
function exe(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, "#!/bin/sh\nexit 0\n");
  chmodSync(path, 0o755);
  return path;
}

t.test(
  "the browser is found, never installed: $HIL_CHROMIUM, Debian's, then Playwright's newest",
  async (t) => {
    const root = t.testdir({});
    const debian = join(root, "usr/bin/chromium");
    const cache = join(root, "ms-playwright");
    const opts = (env: NodeJS.ProcessEnv = {}) => ({ env, debianBinary: debian, playwrightCache: cache });
    t.equal(findChromium(opts()), undefined, "nothing here: nothing found");
    const err = (() => {
      try {
        requireChromium("--screenshot", opts());
      } catch (e) {
        return e as HilError;
      }
      return undefined;
    })();
    t.ok(err instanceof HilError, "without a browser: a HilError");
    t.equal(err?.exitCode, 2);
    t.equal(err?.message, "--screenshot needs a headless Chromium, and this machine has none");
    for (const how of [
      "hil setup --browser",
      "apt-get install chromium",
      "npx playwright install chromium",
      cache,
      "HIL_CHROMIUM=",
    ])
      t.match(err?.detail, how, `the error names ${how}`);

    const shell = exe(
      join(cache, "chromium_headless_shell-1200/chrome-headless-shell-linux64/chrome-headless-shell"),
    );
    t.same(findChromium(opts()), { binary: shell, source: `Playwright's headless shell 1200 (${cache})` });
    exe(join(cache, "chromium-1100/chrome-linux/chrome"));
    const newest = exe(join(cache, "chromium-1181/chrome-linux64/chrome"));
    mkdirSync(join(cache, "chromium-1300/chrome-linux64"), { recursive: true }); // an unfinished download
    writeFileSync(join(cache, "chromium-1300/chrome-linux64/chrome"), "");
    t.same(
      findChromium(opts()),
      { binary: newest, source: `Playwright's Chromium 1181 (${cache})` },
      "a full Chromium before the headless shell, the newest executable one",
    );
    const elsewhere = join(root, "pw-elsewhere");
    const moved = exe(join(elsewhere, "chromium-7/chrome-linux/chrome"));
    t.equal(
      findChromium(opts({ PLAYWRIGHT_BROWSERS_PATH: elsewhere }))?.binary,
      moved,
      "$PLAYWRIGHT_BROWSERS_PATH",
    );
    exe(debian);
    t.same(findChromium(opts()), { binary: debian, source: "Debian's chromium package" }, "Debian's first");
    const mine = exe(join(root, "opt/chrome"));
    t.same(
      findChromium(opts({ HIL_CHROMIUM: mine })),
      { binary: mine, source: "$HIL_CHROMIUM" },
      "the user's own",
    );
    t.throws(
      () => findChromium(opts({ HIL_CHROMIUM: join(root, "nope") })),
      /\$HIL_CHROMIUM names .*nope, which is not an executable file/,
      "a $HIL_CHROMIUM that is no browser is an error, not a silent fallback",
    );
  },
);

t.test("hil setup installs chromium only when asked (--browser)", async (t) => {
  t.notOk(setupPackages().includes(CHROMIUM_PACKAGE), "not by default");
  t.ok(setupPackages({ browser: true }).includes(CHROMIUM_PACKAGE), "with --browser");
  t.same(
    setupPackages({ browser: true }).filter((p) => !setupPackages().includes(p)),
    [...BROWSER_HOST_PACKAGES],
    "and nothing else changes",
  );
});
