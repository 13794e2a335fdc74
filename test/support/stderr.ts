// What hil's code writes to stderr while a test drives it in-process (notices, [cache] lines).

/**
 * Runs `fn` with process.stderr.write collecting each chunk into `written`, the array `fn` is given
 * (it grows while `fn` runs, and `fn` may empty it), and with `passOn` still writing it out; the
 * real write is back however `fn` ends.
 */
export async function withStderr<T>(
  fn: (written: string[]) => Promise<T>,
  opts: { passOn?: boolean } = {},
): Promise<T> {
  const written: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return opts.passOn ? write(chunk) : true;
  }) as typeof process.stderr.write;
  try {
    return await fn(written);
  } finally {
    process.stderr.write = write;
  }
}

/** The [cache] lines written to stderr while `fn` runs. */
export function cacheNotices<T>(
  fn: () => Promise<T>,
  opts: { passOn?: boolean } = {},
): Promise<{ value: T; lines: string[] }> {
  return withStderr(async (written) => {
    const value = await fn();
    return { value, lines: written.flatMap((c) => c.split("\n")).filter((l) => l.startsWith("[cache]")) };
  }, opts);
}
