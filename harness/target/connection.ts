/**
 * An SSH connection to a target machine (ssh2): commands, streamed commands and file copies, as
 * the harness has them for its own guests (qemu/launch/ssh.ts), with the user's key or agent, the
 * host key's fingerprint kept for the record, and why the connection closed when it closed under us.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import ssh2, { type Client, type ConnectConfig } from "ssh2";
import {
  copyToGuest,
  type ExecOptions,
  type ExecResult,
  type ExecStream,
  execCommand,
  execStream,
} from "../../qemu/launch/ssh.ts";
import { HilError } from "../../util/errors.ts";
import { type TargetAddress, targetLabel } from "./url.ts";

const CONNECT_TIMEOUT_MS = 20_000;
const DEFAULT_KEYS = ["id_ed25519", "id_ecdsa", "id_rsa"];

/** How to authenticate: a private key file (--identity), else SSH_AUTH_SOCK's agent, else ~/.ssh/id_*. */
export function credentials(identity: string | undefined): Pick<ConnectConfig, "privateKey" | "agent"> {
  if (identity !== undefined) return { privateKey: readKey(identity, "--identity") };
  if (process.env.SSH_AUTH_SOCK) return { agent: process.env.SSH_AUTH_SOCK };
  for (const name of DEFAULT_KEYS) {
    const path = join(homedir(), ".ssh", name);
    if (existsSync(path)) return { privateKey: readKey(path, path) };
  }
  throw new HilError("no key to log in to the target with: give --identity <private key file>", {
    where: "--target",
    detail: `no SSH agent (SSH_AUTH_SOCK) and none of ~/.ssh/{${DEFAULT_KEYS.join(",")}}`,
  });
}

function readKey(path: string, where: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new HilError(`${path} ${code === "ENOENT" ? "does not exist" : "cannot be read"}`, {
      where,
      cause: err,
    });
  }
  const parsed = ssh2.utils.parseKey(text);
  if (parsed instanceof Error)
    throw new HilError(`${path} is not a private key hil can use (an unencrypted OpenSSH or PEM key)`, {
      where,
      detail: parsed.message,
    });
  return text;
}

export class TargetConnection {
  private lost: string | undefined;
  private ending = false;

  private constructor(
    private readonly client: Client,
    readonly address: TargetAddress,
    /** SHA256:<base64> of the host key, as ssh-keygen -l prints it */
    readonly hostKey: string,
  ) {
    client.on("error", (err: Error) => {
      this.lost ??= err.message;
    });
    client.on("close", () => {
      if (!this.ending) this.lost ??= "the connection closed";
    });
  }

  static open(
    address: TargetAddress,
    auth: Pick<ConnectConfig, "privateKey" | "agent">,
  ): Promise<TargetConnection> {
    const label = targetLabel(address);
    return new Promise((resolve, reject) => {
      const client = new ssh2.Client();
      let hostKey = "";
      let settled = false;
      client.on("error", (err: Error) => {
        if (settled) return;
        settled = true;
        client.end();
        reject(new HilError(`cannot log in to ${label}: ${err.message}`, { where: "--target", cause: err }));
      });
      client.once("ready", () => {
        settled = true;
        resolve(new TargetConnection(client, address, hostKey));
      });
      client.connect({
        host: address.host,
        port: address.port,
        username: address.user,
        ...auth,
        hostVerifier: (key: Buffer) => {
          hostKey = `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
          return true;
        },
        readyTimeout: CONNECT_TIMEOUT_MS,
        keepaliveInterval: 5000,
        keepaliveCountMax: 6,
      });
    });
  }

  get label(): string {
    return targetLabel(this.address);
  }

  /** Why the connection went away while it was in use; undefined while it is up or after close(). */
  get lostReason(): string | undefined {
    return this.lost;
  }

  exec(command: string, opts?: ExecOptions): Promise<ExecResult> {
    return execCommand(this.client, command, opts);
  }

  /** A command that must succeed: its stdout, or a HilError with what it printed. */
  async run(command: string, what: string, opts?: ExecOptions): Promise<string> {
    const r = await this.exec(command, opts);
    if (r.exitCode !== 0)
      throw new HilError(`${this.label}: ${what} failed (exit ${r.exitCode})`, {
        detail: `${command}\n${r.stderr.trim() || r.stdout.trim()}`.trim(),
      });
    return r.stdout;
  }

  stream(command: string, opts?: { timeoutMs?: number }): Promise<ExecStream> {
    return execStream(this.client, command, opts);
  }

  copyTo(localPath: string, remotePath: string, opts?: { mode?: number }): Promise<void> {
    return copyToGuest(this.client, localPath, remotePath, opts?.mode);
  }

  close(): void {
    this.ending = true;
    this.client.end();
  }
}
