/**
 * Which headless Chromium draws the HTML report (hil report --screenshot, the report tests): one
 * already on the machine, never one installed on the way. In order: $HIL_CHROMIUM (a binary the
 * user names), Debian's chromium package (/usr/bin/chromium: `hil setup --browser` installs it),
 * then a Chromium that Playwright downloaded (`npx playwright install chromium`) into its cache,
 * $PLAYWRIGHT_BROWSERS_PATH or ~/.cache/ms-playwright, newest revision first. Playwright's layout
 * (a chromium-<revision> directory holding chrome-linux64/chrome, or chrome-linux/chrome in older
 * releases; chromium_headless_shell-<revision> holding the headless shell) is the one its registry
 * declares: microsoft/playwright, packages/playwright-core/src/server/registry/index.ts,
 * EXECUTABLE_PATHS.
 */
import { readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { HilError } from "../../util/errors.ts";
import { isExecutable } from "../../util/executable.ts";

/** The Debian package and the binary it installs. */
export const CHROMIUM_PACKAGE = "chromium";
export const CHROMIUM_BINARY = "/usr/bin/chromium";
/** What `hil setup --browser` installs for the report's screenshots. */
export const BROWSER_HOST_PACKAGES = [CHROMIUM_PACKAGE] as const;

export interface FoundChromium {
  binary: string;
  /** where it comes from, in words */
  source: string;
}

export interface FindOptions {
  /** the environment ($HIL_CHROMIUM, $PLAYWRIGHT_BROWSERS_PATH; default process.env) */
  env?: NodeJS.ProcessEnv;
  /** Debian's binary (default /usr/bin/chromium) */
  debianBinary?: string;
  /** Playwright's default cache (default ~/.cache/ms-playwright) */
  playwrightCache?: string;
}

/** Playwright's browser directories and the executable inside each, by kind. */
const PLAYWRIGHT_LAYOUTS: Array<{ dir: RegExp; exe: string[][]; kind: string }> = [
  {
    dir: /^chromium-(\d+)$/,
    exe: [
      ["chrome-linux64", "chrome"],
      ["chrome-linux", "chrome"],
    ],
    kind: "Chromium",
  },
  {
    dir: /^chromium_headless_shell-(\d+)$/,
    exe: [
      ["chrome-headless-shell-linux64", "chrome-headless-shell"],
      ["chrome-linux", "headless_shell"],
    ],
    kind: "headless shell",
  },
];

export function playwrightCacheDir(opts: FindOptions = {}): string {
  const env = opts.env ?? process.env;
  return env.PLAYWRIGHT_BROWSERS_PATH || opts.playwrightCache || join(homedir(), ".cache", "ms-playwright");
}

/** The Chromium builds in Playwright's cache, full Chromium before the headless shell, newest first. */
function playwrightChromium(cache: string): FoundChromium[] {
  let names: string[];
  try {
    names = readdirSync(cache);
  } catch {
    return [];
  }
  return PLAYWRIGHT_LAYOUTS.flatMap((layout) =>
    names
      .flatMap((n) => {
        const m = layout.dir.exec(n);
        return m ? [{ n, rev: Number(m[1]) }] : [];
      })
      .sort((a, b) => b.rev - a.rev)
      .flatMap(({ n, rev }) =>
        layout.exe
          .map((parts) => join(cache, n, ...parts))
          .filter(isExecutable)
          .map((binary) => ({ binary, source: `Playwright's ${layout.kind} ${rev} (${cache})` })),
      ),
  );
}

/** The Chromium to use, or undefined when the machine has none. */
export function findChromium(opts: FindOptions = {}): FoundChromium | undefined {
  const env = opts.env ?? process.env;
  const named = env.HIL_CHROMIUM;
  if (named) {
    if (!isExecutable(named))
      throw new HilError(`$HIL_CHROMIUM names ${named}, which is not an executable file`, {
        detail: "unset it to use Debian's chromium or Playwright's, or name a Chromium or Chrome binary",
      });
    return { binary: named, source: "$HIL_CHROMIUM" };
  }
  const debian = opts.debianBinary ?? CHROMIUM_BINARY;
  if (isExecutable(debian)) return { binary: debian, source: `Debian's ${CHROMIUM_PACKAGE} package` };
  return playwrightChromium(playwrightCacheDir(opts))[0];
}

/** The Chromium to use; without one, an error that says how to get one (nothing is installed here). */
export function requireChromium(what: string, opts: FindOptions = {}): FoundChromium {
  const found = findChromium(opts);
  if (found) return found;
  throw new HilError(`${what} needs a headless Chromium, and this machine has none`, {
    detail: [
      "get one of these (hil installs nothing on its own):",
      ...[
        [
          "hil setup --browser",
          `installs Debian's ${CHROMIUM_PACKAGE} package (${opts.debianBinary ?? CHROMIUM_BINARY})`,
        ],
        [`apt-get install ${CHROMIUM_PACKAGE}`, "the same by hand"],
        ["npx playwright install chromium", `Playwright's build, looked for in ${playwrightCacheDir(opts)}`],
        ["HIL_CHROMIUM=/path/to/chrome", "any Chromium or Chrome binary"],
      ].map(([how, what]) => `  ${how?.padEnd(34)}${what}`),
    ].join("\n"),
  });
}
