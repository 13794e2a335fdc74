/**
 * The line the device server prints on stderr when its hardware trace file cannot be written (a
 * full disk): the server goes on serving the guest, and whoever reads its stderr can tell which
 * file stopped, and why, from the line.
 */

export interface TraceFailure {
  file: string;
  /** the errno name, e.g. ENOSPC */
  code: string;
  /** e.g. "ENOSPC: no space left on device, write" */
  message: string;
}

export function traceFailureLine(file: string, err: NodeJS.ErrnoException): string {
  const message = /^[A-Z][A-Z0-9]+: /.test(err.message)
    ? err.message
    : `${err.code ?? "EIO"}: ${err.message}`;
  return `[vfio-user warn] trace file ${JSON.stringify(file)} stops here: ${message}`;
}

/** The first trace failure in the server's stderr lines, if any. */
export function traceFailureIn(lines: readonly string[]): TraceFailure | undefined {
  for (const line of lines) {
    const m = /^\[vfio-user warn\] trace file ("(?:[^"\\]|\\.)*") stops here: (([A-Z][A-Z0-9]+): .*)$/.exec(
      line,
    );
    if (m)
      return { file: JSON.parse(m[1] as string) as string, code: m[3] as string, message: m[2] as string };
  }
  return undefined;
}
