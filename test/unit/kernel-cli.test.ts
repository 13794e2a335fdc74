import { Command } from "commander";
import t from "tap";
import { register } from "../../harness/kernel/cli.ts";

function program(out: string[]): Command {
  const p = new Command("hil").exitOverride();
  p.configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => out.push(s) });
  register(p);
  for (const c of p.commands) {
    c.exitOverride().configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => out.push(s) });
    for (const sub of c.commands)
      sub.exitOverride().configureOutput({ writeOut: (s) => out.push(s), writeErr: (s) => out.push(s) });
  }
  return p;
}

t.test("kernel build --help lists its options", async (t) => {
  const out: string[] = [];
  await t.rejects(program(out).parseAsync(["node", "hil", "kernel", "build", "--help"]), {
    code: "commander.helpDisplayed",
  });
  const help = out.join("");
  for (const opt of [
    "--base <base>",
    "--series <mbox|dir>",
    "--config <fragment>",
    "--json",
    "debian:6.12",
  ]) {
    t.ok(help.includes(opt), `help mentions ${opt}`);
  }
});

t.test("kernel build without --base is a usage error", async (t) => {
  const out: string[] = [];
  await t.rejects(program(out).parseAsync(["node", "hil", "kernel", "build"]), {
    code: "commander.missingMandatoryOptionValue",
  });
  t.match(out.join(""), /--base <base>/);
});

t.test("--config repeats and keeps its order", async (t) => {
  const p = new Command("hil").exitOverride();
  register(p);
  const build = p.commands.find((c) => c.name() === "kernel")?.commands.find((c) => c.name() === "build");
  build?.action(async () => {});
  await p.parseAsync([
    "node",
    "hil",
    "kernel",
    "build",
    "--base",
    "debian:6.12",
    "--config",
    "b.config",
    "--config",
    "a.config",
  ]);
  t.same(build?.opts(), { base: "debian:6.12", config: ["b.config", "a.config"] });
});
