/** `--target ssh://user@host[:port]`: the remote machine whose RDMA device the suite runs on. */
import { HilError } from "../../util/errors.ts";

export interface TargetAddress {
  user: string;
  host: string;
  port: number;
}

const WHERE = "--target";

export function parseTargetUrl(text: string): TargetAddress {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new HilError(`"${text}" is not a URL: give ssh://user@host[:port]`, { where: WHERE });
  }
  if (url.protocol !== "ssh:")
    throw new HilError(`"${text}": only ssh:// targets are supported (ssh://user@host[:port])`, {
      where: WHERE,
    });
  if (url.password)
    throw new HilError(
      `"${url.protocol}//${url.username}:***@${url.host}": no password in the URL; give --identity <key>`,
      {
        where: WHERE,
      },
    );
  if (!url.username) throw new HilError(`"${text}" names no user: ssh://user@host[:port]`, { where: WHERE });
  if (!url.hostname) throw new HilError(`"${text}" names no host: ssh://user@host[:port]`, { where: WHERE });
  if ((url.pathname && url.pathname !== "/") || url.search || url.hash)
    throw new HilError(`"${text}": a target is ssh://user@host[:port], with nothing after the port`, {
      where: WHERE,
    });
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return { user: decodeURIComponent(url.username), host, port: url.port ? Number(url.port) : 22 };
}

/** How the target is named in progress lines, errors and verdicts.json. */
export function targetLabel(t: TargetAddress): string {
  const host = t.host.includes(":") ? `[${t.host}]` : t.host;
  return `ssh://${t.user}@${host}${t.port === 22 ? "" : `:${t.port}`}`;
}
