import { createHash } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { HilError } from "../../util/errors.ts";
import { progress } from "../../util/progress.ts";

export interface ExpectedFile {
  sha256: string;
  /** bytes, when known in advance */
  size?: number;
}

const DOWNLOAD_TIMEOUT_MS = 30 * 60_000;

/**
 * Downloads `url` to `dest`, checking size and sha256 before the file appears under its name.
 * On any failure no file is left at `dest` or beside it.
 */
export async function downloadVerified(
  url: string,
  dest: string,
  expected: ExpectedFile,
  label: string,
): Promise<void> {
  const part = `${dest}.part`;
  const step = progress.step(`[download] ${label}`);
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) }).catch(
      (err: unknown) => {
        throw new HilError(`cannot download ${url}`, { detail: String((err as Error).cause ?? err) });
      },
    );
    if (!res.ok || !res.body) throw new HilError(`download failed: ${url} answered HTTP ${res.status}`);
    const total = expected.size ?? (Number(res.headers.get("content-length")) || undefined);
    const hash = createHash("sha256");
    let received = 0;
    const file = await open(part, "w");
    try {
      for await (const chunk of res.body) {
        hash.update(chunk);
        await file.write(chunk);
        received += chunk.byteLength;
        step.update(Math.floor(received / 1e6), total ? Math.floor(total / 1e6) : undefined, "MB");
      }
    } finally {
      await file.close();
    }
    const sha256 = hash.digest("hex");
    if (expected.size !== undefined && received !== expected.size) {
      throw new HilError(`download of ${url} is ${received} bytes, expected ${expected.size}`);
    }
    if (sha256 !== expected.sha256) {
      throw new HilError(`download of ${url} has the wrong checksum`, {
        detail: `sha256 ${sha256}\nexpected ${expected.sha256}`,
      });
    }
    await rename(part, dest);
    step.succeed(`${(received / 1e6).toFixed(1)} MB, sha256 verified`);
  } catch (err) {
    step.fail();
    await rm(part, { force: true });
    throw err;
  }
}
