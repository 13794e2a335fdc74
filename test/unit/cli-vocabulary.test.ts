// One option vocabulary: for every hil command, the options its --help prints are the options the
// README's section for it documents (its synopsis and its code spans that start with an option),
// neither side has one the other lacks; the old spellings are hidden from every help and name an
// option that is there; and every error message of the harness that names a hil option names one
// some command has (`hil <cmd> --x` in a message: one that command has).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import t from "tap";
import { registerCommands } from "../../harness/cli/commands.ts";
import { OLD_SPELLINGS } from "../../harness/cli/old-spellings.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OPTION = /(?<![\w-])--[a-z][a-z0-9-]*/g;

/** Every leaf command of hil by its full name ("run", "kernel build"). */
async function leafCommands(): Promise<Map<string, Command>> {
  const program = new Command("hil");
  await registerCommands(program);
  const leaves = new Map<string, Command>();
  const walk = (cmd: Command, prefix: string) => {
    for (const c of cmd.commands) {
      const name = `${prefix}${c.name()}`;
      if (c.commands.length > 0) walk(c, `${name} `);
      else leaves.set(name, c);
    }
  };
  walk(program, "");
  return leaves;
}

/** The long options in the "Options:" part of a --help text (--help itself left out). */
export function helpOptions(help: string): Set<string> {
  const out = new Set<string>();
  const options = help.split(/^Options:\n/m)[1] ?? "";
  for (const line of options.split("\n")) {
    if (line !== "" && !line.startsWith(" ")) break;
    // a flags line: two spaces, then "-x, --long <arg>" or "--long"; descriptions are indented further
    const m = /^ {2}(?:-\w, )?(--[a-z][a-z0-9-]*)/.exec(line);
    if (m?.[1] && m[1] !== "--help") out.add(m[1]);
  }
  return out;
}

/** The command reference's "## hil <command>" sections (docs/commands.md) by command name. */
export function readmeSections(readme: string): Map<string, string> {
  const sections = new Map<string, string>();
  const parts = readme.split(/^(?=#{1,2} )/m);
  for (const part of parts) {
    const m = /^## hil (.+)\n/.exec(part);
    if (m?.[1]) sections.set(m[1].trim(), part.slice(m[0].length));
  }
  return sections;
}

/**
 * The options a README section documents: those in its synopsis lines (`hil <command> ...` in a
 * fenced block, with their indented continuation lines) and the code spans of its text that start
 * with an option (`--kernel <base>`); a span like `hil matrix --shard i/n` is another command's.
 */
export function readmeOptions(command: string, section: string): Set<string> {
  const out = new Set<string>();
  const prose: string[] = [];
  let fenced = false;
  let synopsis = false;
  for (const line of section.split("\n")) {
    if (line.startsWith("```")) {
      fenced = !fenced;
      synopsis = false;
      continue;
    }
    if (!fenced) {
      prose.push(line);
      continue;
    }
    if (line.startsWith(`hil ${command} `) || line === `hil ${command}`) synopsis = true;
    else if (!/^\s/.test(line)) synopsis = false;
    if (synopsis) for (const o of line.match(OPTION) ?? []) out.add(o);
  }
  for (const span of prose.join("\n").match(/`[^`\n]+`/g) ?? []) {
    const m = /^`(--[a-z][a-z0-9-]*)/.exec(span);
    if (m?.[1]) out.add(m[1]);
  }
  out.delete("--help");
  return out;
}

const README = readFileSync(join(ROOT, "docs", "commands.md"), "utf8");

t.test(
  "every command's --help options are the options its section of docs/commands.md documents",
  async (t) => {
    const leaves = await leafCommands();
    const sections = readmeSections(README);
    t.same([...sections.keys()].sort(), [...leaves.keys()].sort(), "a README section for each command");
    for (const [name, cmd] of leaves) {
      const help = helpOptions(cmd.helpInformation());
      const documented = readmeOptions(name, sections.get(name) ?? "");
      t.ok(help.size > 0, `hil ${name} --help lists options`);
      t.same(
        [...help].filter((o) => !documented.has(o)),
        [],
        `hil ${name}: every option of --help is in the README`,
      );
      t.same(
        [...documented].filter((o) => !help.has(o)),
        [],
        `hil ${name}: every option the README documents is in --help`,
      );
    }
  },
);

t.test("the parsers see a difference on either side", async (t) => {
  const section = [
    "```",
    "hil x [--a <v>]",
    "        [--b]",
    "hil --version",
    "```",
    "",
    "- `--c`: c; see `hil y --d`.",
  ].join("\n");
  t.same([...readmeOptions("x", section)].sort(), ["--a", "--b", "--c"]);
  const help = [
    "Usage: hil x [options]",
    "",
    "Options:",
    "  --a <v>      a, like --e",
    "               and --f",
    "  -V, --version  v",
    "  -h, --help   display help for command",
    "",
    "after text --g",
  ].join("\n");
  t.same([...helpOptions(help)].sort(), ["--a", "--version"]);
});

t.test("old spellings: hidden from every help, each the spelling of an option that is there", async (t) => {
  const leaves = await leafCommands();
  const all = new Set([...leaves.values()].flatMap((c) => [...helpOptions(c.helpInformation())]));
  for (const [old, now] of Object.entries(OLD_SPELLINGS)) {
    t.notOk(all.has(old), `${old} is in no --help`);
    t.ok(all.has(now), `${now} is an option`);
    const withOld = [...leaves].filter(([, c]) => c.options.some((o) => o.long === old));
    t.ok(withOld.length > 0, `${old} is accepted somewhere`);
    for (const [name, c] of withOld)
      t.ok(helpOptions(c.helpInformation()).has(now), `hil ${name} takes ${old} and has ${now}`);
  }
});

/** The .ts files of the harness whose errors users see (the bench scripts have their own options). */
function harnessFiles(dir = join(ROOT, "harness")): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "bench" ? [] : harnessFiles(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** The text of the arguments of each `new HilError(` / `new InvalidArgumentError(` in `source`. */
export function errorArguments(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/new (?:HilError|InvalidArgumentError)\(/g)) {
    let depth = 1;
    let j = (m.index ?? 0) + m[0].length;
    const start = j;
    while (depth > 0 && j < source.length) {
      if (source[j] === "(") depth++;
      else if (source[j] === ")") depth--;
      j++;
    }
    out.push(source.slice(start, j - 1));
  }
  return out;
}

/** Another program's options that messages quote: `git format-patch --stdout`. */
const OTHER_PROGRAMS = /(?:git format-patch|b4 am)\s+$/;

t.test("every error message that names a hil option names one that exists", async (t) => {
  const leaves = await leafCommands();
  const optionsOf = new Map([...leaves].map(([name, c]) => [name, helpOptions(c.helpInformation())]));
  const every = new Set([...optionsOf.values()].flatMap((s) => [...s]));
  every.add("--version"); // hil --version
  const named: string[] = [];
  for (const file of harnessFiles()) {
    const source = readFileSync(file, "utf8");
    // a message held in a constant: `const X = "..."` used as new HilError(X)
    const constants = new Map(
      [...source.matchAll(/^(?:export )?const ([A-Z_]+)\s*=\s*\n?\s*("[^"\n]*"|`[^`]*`);/gm)].map((m) => [
        m[1] as string,
        m[2] as string,
      ]),
    );
    for (const arg of errorArguments(source)) {
      const text = arg.replace(/\b[A-Z_]{3,}\b/g, (id) => constants.get(id) ?? id);
      for (const m of text.matchAll(OPTION)) {
        const before = text.slice(0, m.index);
        if (OTHER_PROGRAMS.test(before)) continue;
        const where = `${relative(ROOT, file)}: ${m[0]}`;
        named.push(where);
        const cmd = /hil ([a-z]+(?: build)?) $/.exec(before)?.[1];
        if (cmd) t.ok(optionsOf.get(cmd)?.has(m[0]), `${where} is an option of hil ${cmd}`);
        else t.ok(every.has(m[0]), `${where} is a hil option`);
      }
    }
  }
  t.ok(named.length >= 15, `the scan finds the messages that name options (${named.length})`);
  t.ok(
    named.some((n) => n.endsWith("no-device.ts: --device-profile")),
    "including a message held in a constant",
  );
});
