import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import ssh2 from "ssh2";
import t, { type Test } from "tap";
import { fitsDropbear, GUEST_COMMAND_MAX_BYTES } from "../../qemu/launch/guest.ts";
import {
  connectOnce,
  connectWithRetry,
  copyFromGuest,
  copyToGuest,
  execCommand,
  execStream,
  generateSshKeyPair,
  interactiveShell,
  killTagged,
  type SshTarget,
  shellQuote,
  waitForStdout,
  wrapForExitStatus,
} from "../../qemu/launch/ssh.ts";

/**
 * A tiny SSH server running commands with the host's /bin/sh, like dropbear does in the guest:
 * exec channels without a pty, separate stdout/stderr, exit status, signals.
 */
async function fakeSshd(t: Test, authorized: string, opensNoChannel = () => false): Promise<number> {
  const hostKey = generateSshKeyPair("host");
  const allowed = ssh2.utils.parseKey(authorized);
  if (allowed instanceof Error) throw allowed;
  const server = new ssh2.Server({ hostKeys: [hostKey.privateKey] }, (conn) => {
    conn.on("error", () => {});
    conn.on("authentication", (ctx) => {
      const ok =
        ctx.method === "publickey" &&
        ctx.key.algo === allowed.type &&
        Buffer.compare(ctx.key.data, allowed.getPublicSSH()) === 0 &&
        (!ctx.signature || allowed.verify(ctx.blob as Buffer, ctx.signature, ctx.hashAlgo) === true);
      if (ok) ctx.accept();
      else ctx.reject(["publickey"]);
    });
    conn.on("session", (accept) => {
      // a stopped or wedged server: the channel is never opened
      if (opensNoChannel()) return;
      const session = accept();
      let child: ReturnType<typeof spawn> | undefined;
      const run = (channel: ssh2.ServerChannel, args: string[]) => {
        child = spawn("sh", args, { stdio: "pipe", detached: true });
        // a command that ends without reading its input (a failed redirection) closes the pipe, as
        // in dropbear: the rest of the client's input is dropped, not an error of the server
        child.stdin?.on("error", () => {});
        channel.pipe(child.stdin as NodeJS.WritableStream);
        child.stdout?.pipe(channel, { end: false });
        child.stderr?.pipe(channel.stderr, { end: false });
        // a closed channel ends the command too (the client closes it after its "signal" request)
        let closed = false;
        channel.on("close", () => {
          closed = true;
          if (child?.pid && child.exitCode === null) process.kill(-child.pid, "SIGKILL");
        });
        child.on("close", (code, signal) => {
          // nothing more on a channel closed already (the client would drop the connection), as in dropbear
          if (closed) return;
          // as dropbear now and then does: close the channel without the exit-status request
          if (args[1]?.includes("HIL_TEST_NO_EXIT_STATUS")) {
            channel.end();
            return;
          }
          if (signal) channel.exit(signal.replace(/^SIG/, ""), false, "");
          else channel.exit(code ?? 0);
          channel.end();
        });
      };
      session.on("pty", (ok) => ok?.());
      session.on("window-change", (ok) => ok?.());
      // (accept, reject, info): a "signal" request without want-reply has neither callback
      session.on("signal", (ok, _reject, info) => {
        ok?.();
        // the whole process group, as a signal to a pty session would reach
        if (child?.pid) process.kill(-child.pid, `SIG${info.name}` as NodeJS.Signals);
      });
      session.on("exec", (ok, _reject, info) => run(ok(), ["-c", info.command]));
      session.on("shell", (ok) => run(ok(), ["-s"]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

async function setup(t: Test) {
  const keys = generateSshKeyPair("hil@test");
  const port = await fakeSshd(t, keys.publicKey);
  const target: SshTarget = { host: "127.0.0.1", port, username: "root", privateKey: keys.privateKey };
  const client = await connectOnce(target, 5000);
  t.teardown(() => client.end());
  const dir = mkdtempSync(join(tmpdir(), "hil-ssh-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { client, dir, target };
}

t.test("keys come in OpenSSH format", async (t) => {
  const keys = generateSshKeyPair("hil@test");
  t.match(keys.publicKey, /^ssh-ed25519 AAAA\S+ hil@test$/);
  t.match(keys.privateKey, /^-----BEGIN OPENSSH PRIVATE KEY-----/);
});

t.test("every generated key pair parses back (ssh2 draws a malformed one ~3 times in 1000)", async (t) => {
  let bad = 0;
  for (let i = 0; i < 2000; i++) {
    const pair = generateSshKeyPair(`k${i}`);
    if (
      ssh2.utils.parseKey(pair.privateKey) instanceof Error ||
      ssh2.utils.parseKey(pair.publicKey) instanceof Error
    )
      bad++;
  }
  t.equal(bad, 0);
});

t.test("a channel closed without its exit status: the status comes from the stream", async (t) => {
  const { client } = await setup(t);
  const r = await execCommand(client, "echo out; echo err >&2; HIL_TEST_NO_EXIT_STATUS=1; exit 4");
  t.equal(r.exitCode, 4);
  t.equal(r.stdout, "out\n");
  t.equal(r.stderr, "err\n", "the trailer is not part of the command's stderr");
});

t.test("exit codes propagate, stdout and stderr stay apart, stdin is fed", async (t) => {
  const { client } = await setup(t);
  const r = await execCommand(client, "echo out; echo err >&2; exit 3");
  t.same(r, { exitCode: 3, stdout: "out\n", stderr: "err\n" });
  const cat = await execCommand(client, "tr a-z A-Z", { input: "shout\n" });
  t.equal(cat.stdout, "SHOUT\n");
  t.equal(cat.exitCode, 0);
});

t.test("a command past its timeout is killed and reported with its output so far", async (t) => {
  const { client } = await setup(t);
  await t.rejects(execCommand(client, "echo started; sleep 20", { timeoutMs: 300 }), {
    name: "HilError",
    message: /timed out after 300 ms: echo started; sleep 20/,
    detail: /started/,
  });
});

t.test(
  "a server that opens no channel: the command times out at its limit, the connection is given up",
  async (t) => {
    const keys = generateSshKeyPair("hil@test");
    let silent = false;
    const port = await fakeSshd(t, keys.publicKey, () => silent);
    const client = await connectOnce(
      { host: "127.0.0.1", port, username: "root", privateKey: keys.privateKey },
      5000,
    );
    t.teardown(() => client.end());
    const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
    silent = true;
    const started = Date.now();
    await t.rejects(execCommand(client, "true", { timeoutMs: 300 }), {
      name: "HilError",
      message: /^guest command timed out after 300 ms: true$/,
      detail: /opened no channel for it in that time: the connection was given up/,
    });
    t.ok(Date.now() - started < 2000, `within its limit, not ssh2's keepalive (${Date.now() - started} ms)`);
    await closed;
    t.throws(() => client.exec("true", () => {}), /Not connected/, "the next command connects anew");
  },
);

t.test("a command ended by a signal reports 128+n", async (t) => {
  const { client } = await setup(t);
  const r = await execCommand(client, "kill -TERM $$");
  t.equal(r.exitCode, 143);
  t.equal(r.signal, "TERM");
});

t.test("a streamed command: stdin written while it runs, stdout seen as it comes", async (t) => {
  const { client } = await setup(t);
  const s = await execStream(client, 'while read l; do echo "got $l"; [ "$l" = bye ] && echo err >&2; done');
  const chunks: string[] = [];
  const off = s.onStdout((c) => chunks.push(c));
  t.equal(s.write("one\n"), true);
  t.equal(await waitForStdout(s, (out) => out.includes("got one\n")), true, "the answer to the first line");
  t.equal(s.stdout, "got one\n", "and nothing else yet");
  t.same(chunks.join(""), "got one\n", "told to the listener");
  off();
  s.write("two\n");
  t.equal(await waitForStdout(s, (out) => out.endsWith("got two\n")), true);
  s.end("bye\n");
  t.equal(s.write("late\n"), false, "nothing is written after EOF");
  s.end();
  const r = await s.result;
  t.same(
    r,
    { exitCode: 0, stdout: "got one\ngot two\ngot bye\n", stderr: "err\n" },
    "the trailer is taken off",
  );
  t.same(chunks.join(""), "got one\n", "an unsubscribed listener hears no more");
  t.equal(
    await waitForStdout(s, (out) => out.includes("never")),
    false,
    "waiting on an ended command returns false",
  );
});

t.test("a streamed command closed without its exit status: the status comes from the stream", async (t) => {
  const { client } = await setup(t);
  const s = await execStream(client, "cat; echo err >&2; HIL_TEST_NO_EXIT_STATUS=1; exit 6");
  s.end("in\n");
  t.same(await s.result, { exitCode: 6, stdout: "in\n", stderr: "err\n" });
});

t.test("a streamed command: waitForStdout returns false when it ends first; kill and timeout", async (t) => {
  const { client } = await setup(t);
  const short = await execStream(client, "echo partial; exit 2");
  t.equal(await waitForStdout(short, (out) => out.includes("never")), false);
  t.equal((await short.result).exitCode, 2);

  const long = await execStream(client, "echo started; sleep 20");
  t.equal(await waitForStdout(long, (out) => out.includes("started")), true);
  const t0 = Date.now();
  long.kill();
  const killed = await long.result;
  t.ok(Date.now() - t0 < 5000, "kill ends it at once");
  t.not(killed.exitCode, 0);
  t.equal(long.write("more\n"), false, "nothing is written to an ended command");

  const slow = await execStream(client, "echo started; sleep 20", { timeoutMs: 300 });
  await t.rejects(slow.result, {
    name: "HilError",
    message: /timed out after 300 ms: echo started; sleep 20/,
    detail: /started/,
  });
});

t.test("copies files both ways, binary-safe, with quoting and mode", async (t) => {
  const { client, dir } = await setup(t);
  const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) & 0xff));
  const local = join(dir, "payload.bin");
  writeFileSync(local, bytes);
  const remote = join(dir, "it's remote.bin");
  await copyToGuest(client, local, remote, 0o750);
  t.same(readFileSync(remote), bytes);
  const mode = await execCommand(client, `stat -c %a ${shellQuote(remote)}`);
  t.equal(mode.stdout.trim(), "750");
  const back = join(dir, "back.bin");
  await copyFromGuest(client, remote, back);
  t.same(readFileSync(back), bytes);
  await t.rejects(copyFromGuest(client, join(dir, "missing"), join(dir, "never")), {
    name: "HilError",
    message: /cannot copy the guest's/,
    detail: /No such file/,
  });
  t.throws(() => readFileSync(join(dir, "never")), "no partial file is left");
  await t.rejects(copyToGuest(client, local, join(dir, "no/such/dir/x")), { message: /cannot copy/ });
});

t.test("an interactive shell is wired to the given streams and returns the exit status", async (t) => {
  const { client } = await setup(t);
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  stdout.on("data", (d) => {
    out += d;
  });
  const io = { stdin, stdout: Object.assign(stdout, { rows: 40, columns: 100 }), stderr };
  const status = interactiveShell(client, io, "xterm");
  stdin.write("echo hello from the shell; exit 5\n");
  t.equal(await status, 5);
  t.match(out, /hello from the shell/);
});

t.test("connecting retries until the server answers, and gives up at the deadline", async (t) => {
  const keys = generateSshKeyPair("hil@test");
  const dead: SshTarget = { host: "127.0.0.1", port: 1, username: "root", privateKey: keys.privateKey };
  await t.rejects(connectWithRetry(dead, Date.now() + 700), {
    name: "HilError",
    message: /SSH to 127\.0\.0\.1:1 failed after \d+ attempt/,
  });
  const { target } = await setup(t);
  const ok = await connectWithRetry(target, Date.now() + 5000);
  t.equal(ok.attempts, 1);
  ok.client.end();
  const wrongKey = { ...target, privateKey: generateSshKeyPair("other").privateKey };
  await t.rejects(connectOnce(wrongKey, 3000), /authentication/i);
});

t.test("a guest command longer than dropbear takes is refused before it is sent, saying why", async (t) => {
  const fits = "x".repeat(GUEST_COMMAND_MAX_BYTES);
  t.equal(fitsDropbear(fits), fits);
  t.throws(() => fitsDropbear(`${fits}é`), {
    message:
      /^the guest command is 8852 bytes: the guest's SSH server \(dropbear\) runs at most 8850 \(its MAX_CMD_LEN, 9000/,
  });
  t.ok(
    Buffer.byteLength(wrapForExitStatus(fits, "ffffffff")) <= 9000,
    "the longest command it lets through still fits dropbear once wrapped",
  );
});

t.test(
  "killTagged kills every process of a tagged command and only those (run here, on the host's /proc)",
  async (t) => {
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    // a tagged shell with a child of its own, as a timed-out command leaves them
    const tagged = spawn("sh", ["-c", wrapForExitStatus("sleep 301 & echo $!; wait", "0badc0de")], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const child = Number(
      await new Promise<string>((resolve) => tagged.stdout.once("data", (d) => resolve(String(d)))),
    );
    const other = spawn("sleep", ["302"], { stdio: "ignore", env: { ...process.env, HIL_EXEC: "0badc0dd" } });
    t.teardown(() => {
      for (const pid of [child, other.pid]) if (pid && alive(pid)) process.kill(pid, "SIGKILL");
    });
    t.ok(alive(child) && tagged.pid !== undefined && alive(tagged.pid), "running before");
    const exited = new Promise((resolve) => tagged.on("exit", resolve));
    const r = spawn("sh", ["-c", killTagged("0badc0de")], { stdio: "ignore" });
    t.equal(await new Promise((resolve) => r.on("exit", resolve)), 0);
    await exited;
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.notOk(alive(child), "the tagged command's child is gone");
    t.ok(other.pid !== undefined && alive(other.pid), "a process with another tag is left alone");
    t.throws(() => killTagged("x; reboot"), /not hexadecimal/);
  },
);
