/**
 * Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: the
 * browser reads commands from its fd 3 and writes replies and events to fd 4, each message JSON
 * ended by a NUL byte), for tests that must act as a user does: press a key on a focused link,
 * click at a point, emulate print media, and read what the page then shows. One page, attached
 * with a flat session. The browser runs as runChromium runs it (its own process group, a private
 * profile directory), and the group is killed and the profile removed when the test is done.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { chromiumArgs, chromiumEnv } from "../../harness/report/browser.ts";

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

export interface Page {
  /** a command to the page's session */
  send(method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** the page's next event `method` (its params) */
  next(method: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** an expression evaluated in the page, its value returned (promises awaited) */
  evaluate<T>(expression: string): Promise<T>;
  /** navigates and waits for the load event */
  open(url: string): Promise<void>;
  /** a key pressed and released on the focused element (Enter, Tab, " ") */
  press(key: "Enter" | "Tab" | " "): Promise<void>;
  /** a left click at (x, y) of the viewport */
  click(x: number, y: number): Promise<void>;
}

const KEYS = {
  Enter: { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, text: "\r" },
  Tab: { key: "Tab", code: "Tab", windowsVirtualKeyCode: 9 },
  " ": { key: " ", code: "Space", windowsVirtualKeyCode: 32, text: " " },
} as const;

export async function withPage<T>(
  binary: string,
  fn: (page: Page) => Promise<T>,
  opts: { width?: number; height?: number; tmpRoot?: string; timeoutMs?: number } = {},
): Promise<T> {
  const profile = mkdtempSync(join(opts.tmpRoot ?? tmpdir(), "hil-devtools-"));
  const { env, socketRoot } = chromiumEnv(profile);
  const args = chromiumArgs(
    profile,
    ["--remote-debugging-pipe", `--window-size=${opts.width ?? 1400},${opts.height ?? 900}`],
    "about:blank",
  );
  const child = spawn(binary, args, {
    detached: true,
    stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"],
    env,
  });
  const stderr: string[] = [];
  child.stderr?.on("data", (b: Buffer) => stderr.push(b.toString()));
  const toBrowser = child.stdio[3] as Writable;
  const fromBrowser = child.stdio[4] as Readable;
  const pending = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  const waiters: Array<{ method: string; sessionId?: string; resolve: (m: Message) => void }> = [];
  let exited: Error | undefined;
  let buffered = Buffer.alloc(0);
  fromBrowser.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (let end = buffered.indexOf(0); end >= 0; end = buffered.indexOf(0)) {
      const msg = JSON.parse(buffered.subarray(0, end).toString("utf8")) as Message;
      buffered = buffered.subarray(end + 1);
      if (msg.id !== undefined) {
        const p = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) p?.reject(new Error(`DevTools: ${msg.error.message}`));
        else p?.resolve(msg);
      } else {
        const i = waiters.findIndex((w) => w.method === msg.method && w.sessionId === msg.sessionId);
        if (i >= 0) waiters.splice(i, 1)[0]?.resolve(msg);
      }
    }
  });
  child.on("exit", (code, signal) => {
    exited = new Error(`chromium ended (${code ?? signal}): ${stderr.join("").slice(-2000)}`);
    for (const p of pending.values()) p.reject(exited);
    pending.clear();
  });
  let nextId = 0;
  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      if (exited) return reject(exited);
      const id = ++nextId;
      pending.set(id, { resolve: (m) => resolve(m.result ?? {}), reject });
      toBrowser.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  const timer = setTimeout(
    () => child.pid !== undefined && process.kill(-child.pid, "SIGKILL"),
    opts.timeoutMs ?? 120_000,
  );
  try {
    const { targetInfos } = (await send("Target.getTargets")) as {
      targetInfos: Array<{ targetId: string; type: string }>;
    };
    const target = targetInfos.find((x) => x.type === "page");
    if (!target) throw new Error("chromium opened no page");
    const { sessionId } = (await send("Target.attachToTarget", {
      targetId: target.targetId,
      flatten: true,
    })) as {
      sessionId: string;
    };
    const next = (method: string, timeoutMs = 30_000) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no ${method} within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          method,
          sessionId,
          resolve: (m) => {
            clearTimeout(t);
            resolve(m.params ?? {});
          },
        });
      });
    const page: Page = {
      send: (method, params) => send(method, params, sessionId),
      next,
      async evaluate<T>(expression: string): Promise<T> {
        const r = (await send(
          "Runtime.evaluate",
          { expression, returnByValue: true, awaitPromise: true },
          sessionId,
        )) as {
          result: { value: T };
          exceptionDetails?: { text: string; exception?: { description?: string } };
        };
        if (r.exceptionDetails)
          throw new Error(
            `in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`,
          );
        return r.result.value;
      },
      async open(url: string) {
        const loaded = next("Page.loadEventFired");
        await send("Page.navigate", { url }, sessionId);
        await loaded;
      },
      async press(key) {
        const k = KEYS[key];
        await send("Input.dispatchKeyEvent", { type: "keyDown", ...k }, sessionId);
        await send("Input.dispatchKeyEvent", { type: "keyUp", ...k, text: undefined }, sessionId);
      },
      async click(x, y) {
        for (const type of ["mousePressed", "mouseReleased"])
          await send("Input.dispatchMouseEvent", { type, x, y, button: "left", clickCount: 1 }, sessionId);
      },
    };
    await page.send("Page.enable");
    await page.send("Runtime.enable");
    return await fn(page);
  } finally {
    clearTimeout(timer);
    await send("Browser.close").catch(() => undefined);
    if (child.pid !== undefined)
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // the group is gone already
      }
    await new Promise((r) =>
      child.exitCode !== null || child.signalCode !== null ? r(null) : child.once("close", r),
    );
    rmSync(profile, { recursive: true, force: true });
    rmSync(socketRoot, { recursive: true, force: true });
  }
}
