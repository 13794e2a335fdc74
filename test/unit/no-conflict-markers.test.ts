// No tracked file carries a merge's conflict markers: a merge once left them in a Markdown file,
// where the formatter turned ">>>>>>>" into "> > > > > > >" and every check still passed.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { REPO_ROOT } from "../support/cli.ts";

const MARKER = /^(<{7} |={7}$|>{7} |(> ){6}>)/m;

function conflictMarkerLine(text: string): number | undefined {
  const m = MARKER.exec(text);
  return m ? text.slice(0, m.index).split("\n").length : undefined;
}

t.test("the marker finder sees each kind, and not ordinary text", async (t) => {
  t.equal(conflictMarkerLine("a\n<<<<<<< HEAD\nb"), 2);
  t.equal(conflictMarkerLine("a\n=======\nb"), 2);
  t.equal(conflictMarkerLine(">>>>>>> branch\n"), 1);
  t.equal(conflictMarkerLine("x\ny\n> > > > > > > hw-protocol\n"), 3);
  t.equal(conflictMarkerLine("a === b\n> quoted\n======== long rule\n"), undefined);
});

t.test("no tracked file has a conflict marker", async (t) => {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: REPO_ROOT, encoding: "utf8" })
    .split("\0")
    .filter((f) => f && !/\.(png|gz|xz|bin|ko)$/.test(f));
  const found: string[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(join(REPO_ROOT, f), "utf8");
    } catch {
      continue;
    }
    const line = conflictMarkerLine(text);
    if (line !== undefined) found.push(`${f}:${line}`);
  }
  t.same(found, [], "files with a conflict marker");
});
