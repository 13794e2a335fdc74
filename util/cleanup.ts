/**
 * Synchronous last-resort cleanups (kill a QEMU, remove a temp dir) that run when this process
 * exits or is told to stop by a signal, so no path leaves a guest or its files behind.
 */
type Cleanup = () => void;

const cleanups = new Set<Cleanup>();
const SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
let installed = false;

function runAll(): void {
  for (const fn of [...cleanups]) {
    cleanups.delete(fn);
    try {
      fn();
    } catch {
      // best effort: the process is going away
    }
  }
}

/**
 * Runs first (prepended), cleans up, and steps aside. If no one else listens, the signal is sent
 * again so the process dies of it as it would have without us. A listener that re-raises only
 * when it is alone (signal-exit, which execa uses) runs after us and then finds itself alone.
 */
function onSignal(signal: NodeJS.Signals): void {
  runAll();
  uninstall();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on("exit", runAll);
  for (const s of SIGNALS) process.prependListener(s, onSignal);
}

function uninstall(): void {
  if (!installed) return;
  installed = false;
  process.removeListener("exit", runAll);
  for (const s of SIGNALS) process.removeListener(s, onSignal);
}

/** Registers `fn`; the returned function unregisters it (without running it). */
export function onProcessExit(fn: Cleanup): () => void {
  cleanups.add(fn);
  install();
  return () => {
    cleanups.delete(fn);
    if (cleanups.size === 0) uninstall();
  };
}
