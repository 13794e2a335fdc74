/**
 * GuestShell (harness/executor/guest-shell.ts) against a real shell: a local sh behind the same
 * ExecStream interface the guest's SSH channel gives. Scripts run one after another in one shell,
 * each with its own exit code, stdout and stderr, its exit and cd its own; a script past its time
 * ends the shell (the next one opens another); a shell that ends under a script is one error.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t, { type Test } from "tap";
import {
  GuestShell,
  guestShellOf,
  type StreamShell,
  scriptInput,
  scriptOutput,
} from "../../harness/executor/guest-shell.ts";
import type { ExecResult, ExecStream } from "../../qemu/launch/ssh.ts";
import { processGone } from "../support/guest.ts";

/** A local sh as an ExecStream; every shell it opened is listed, for the test to see them gone. */
function localShells(): StreamShell & { pids: number[]; opened: number } {
  const pids: number[] = [];
  const self = {
    pids,
    opened: 0,
    async execStream(command: string): Promise<ExecStream> {
      self.opened++;
      // its own process group: kill() takes what the shell started too, as the guest's kill does
      const child = spawn("sh", ["-c", command], { stdio: ["pipe", "pipe", "pipe"], detached: true });
      pids.push(child.pid ?? -1);
      let stdout = "";
      const listeners = new Set<(chunk: string) => void>();
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        for (const l of [...listeners]) l(chunk);
      });
      child.stdin.on("error", () => {});
      const result = new Promise<ExecResult>((resolve) =>
        child.on("close", (code) => resolve({ exitCode: code ?? -1, stdout, stderr: "" })),
      );
      return {
        write: (data) => child.stdin.writable && child.stdin.write(data),
        end: (data) => child.stdin.end(data),
        get stdout() {
          return stdout;
        },
        onStdout(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        kill: () => {
          try {
            process.kill(-(child.pid ?? 0), "SIGKILL");
          } catch {}
        },
        result,
      };
    },
  };
  return self;
}

/**
 * A GuestShell on local shells whose stderr files go to a temp dir of the test's: gone at its end
 * (a killed shell cannot remove its own), and the test can see what a clean close left.
 */
function shellFor(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), "hil-guest-shell-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const shells = localShells();
  const shell = new GuestShell(shells, dir);
  t.teardown(() => shell.close());
  return { shells, shell, dir };
}

t.test(
  "scripts run one after another in one shell, each with its own status, stdout and stderr",
  async (t) => {
    const { shells, shell, dir } = shellFor(t);
    t.same(await shell.run("echo one; echo warn >&2", 5000), {
      exitCode: 0,
      stdout: "one\n",
      stderr: "warn\n",
    });
    t.same(await shell.run("cd /; printf two; exit 3", 5000), { exitCode: 3, stdout: "two", stderr: "" });
    t.same(
      await shell.run("printf -- '-n a\\\\b\\n\\nlast' >&2", 5000),
      { exitCode: 0, stdout: "", stderr: "-n a\\b\n\nlast\n" },
      "stderr as written, its last line without a newline too",
    );
    t.same(
      await shell.run(`pwd`, 5000),
      { exitCode: 0, stdout: `${process.cwd()}\n`, stderr: "" },
      "the exit and the cd stayed in the script's subshell",
    );
    const together = await Promise.all([shell.run("sleep 0.2; echo a", 5000), shell.run("echo b", 5000)]);
    t.same(
      together.map((r) => r.stdout),
      ["a\n", "b\n"],
      "scripts asked for at once run in turn",
    );
    t.equal(shells.opened, 1, "all through one shell");
    await shell.close();
    t.same(readdirSync(dir), [], "a closed shell removed its stderr file");
  },
);

t.test("a script that reads stdin reads nothing: the next script's text stays the shell's", async (t) => {
  const { shells, shell } = shellFor(t);
  const [reader, next] = await Promise.all([
    shell.run("cat; echo read-done", 5000),
    shell.run("echo after", 5000),
  ]);
  t.same(reader, { exitCode: 0, stdout: "read-done\n", stderr: "" });
  t.same(next, { exitCode: 0, stdout: "after\n", stderr: "" });
  t.equal(shells.opened, 1);
});

t.test(
  "a script past its time ends the shell, with exec's error; the next script opens another",
  async (t) => {
    const { shells, shell } = shellFor(t);
    await t.rejects(shell.run("echo started; sleep 30", 300), {
      message: "guest command timed out after 300 ms: echo started; sleep 30",
    });
    t.ok(await processGone(shells.pids[0] ?? -1), "the timed-out shell was killed");
    t.same(await shell.run("echo again", 5000), { exitCode: 0, stdout: "again\n", stderr: "" });
    t.equal(shells.opened, 2);
  },
);

t.test("a shell that ends under a script is one error naming the script", async (t) => {
  const { shells, shell } = shellFor(t);
  await t.rejects(shell.run("kill -9 $$", 5000), {
    message: "the guest's shell ended while it ran: kill -9 $$",
  });
  t.same((await shell.run("echo fine", 5000)).stdout, "fine\n", "the next script runs");
  t.equal(shells.opened, 2, "in another shell");
});

t.test("a lost shell lets the guest say why first: its error is the one thrown", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "hil-guest-shell-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const shell = new GuestShell(localShells(), dir, async () => {
    throw new Error("the guest is gone: QEMU was killed by SIGKILL");
  });
  t.teardown(() => shell.close());
  await t.rejects(shell.run("kill -9 $$", 5000), {
    message: "the guest is gone: QEMU was killed by SIGKILL",
  });
});

t.test(
  "guestShellOf: a shell where the guest can keep one open; a lost one asks the guest first",
  async (t) => {
    t.equal(
      guestShellOf({ exec: async () => ({}) }),
      undefined,
      "a guest without a streaming exec runs its commands as execs",
    );
    const dir = mkdtempSync(join(tmpdir(), "hil-guest-shell-"));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const asked: string[] = [];
    const shells = localShells();
    const shell = guestShellOf(
      {
        execStream: (command) => shells.execStream(command),
        exec: async (command) => {
          asked.push(command);
          throw new Error("QEMU exited");
        },
      },
      dir,
    );
    if (!shell) throw new Error("no shell for a guest with a streaming exec");
    t.teardown(() => shell.close());
    await t.rejects(shell.run("kill -9 $$", 5000), { message: "QEMU exited" });
    t.same(asked, ["true"], "the guest was asked over another channel");
  },
);

t.test("a script's output is found between its own lines only", async (t) => {
  const tag = "hil-sh-abc";
  const input = scriptInput("echo x", tag, "/tmp/e.err");
  t.match(
    input,
    /^\(\necho x\n\) 2>\/tmp\/e\.err <\/dev\/null\n/,
    "the script in a subshell, stderr to a file, stdin empty",
  );
  const out = `old output\nhil-sh-old 0\nx\nhil-sh-abc 7\nerr line\n\nhil-sh-abc\n`;
  t.same(scriptOutput(out, 24, tag), { stdout: "x", exitCode: 7, stderr: "err line\n" });
  t.equal(scriptOutput(out.slice(0, -1), 24, tag), undefined, "not before its closing line is whole");
  t.equal(scriptOutput("x\nhil-sh-abc 0\n", 0, tag), undefined, "nor before it comes");
});
