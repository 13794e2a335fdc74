import { Command } from "commander";
import t from "tap";
import { register } from "../../harness/cli/kernel-command.ts";
import { withStderr } from "../support/stderr.ts";

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
    "--kernel <base>",
    "--series <mbox|dir>",
    "--config <fragment>",
    "--json",
    "debian:6.12",
  ]) {
    t.ok(help.includes(opt), `help mentions ${opt}`);
  }
});

t.test("kernel build without --kernel is a usage error", async (t) => {
  const out: string[] = [];
  await t.rejects(program(out).parseAsync(["node", "hil", "kernel", "build"]), {
    code: "commander.missingMandatoryOptionValue",
  });
  t.match(out.join(""), /--kernel <base>/);
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
    "--kernel",
    "debian:6.12",
    "--config",
    "b.config",
    "--config",
    "a.config",
  ]);
  t.same(build?.opts(), { kernel: "debian:6.12", config: ["b.config", "a.config"] });
});

t.test(
  "--base, the old spelling of --kernel, still works with a notice; both at once is an error",
  async (t) => {
    const parse = async (args: string[]) => {
      const p = new Command("hil").exitOverride();
      register(p);
      const build = p.commands.find((c) => c.name() === "kernel")?.commands.find((c) => c.name() === "build");
      build?.exitOverride().action(async () => {});
      await p.parseAsync(["node", "hil", "kernel", "build", ...args]);
      return build?.opts();
    };
    await withStderr(async (notices) => {
      t.match(await parse(["--base", "debian:6.1"]), { kernel: "debian:6.1" });
      t.same(notices, ["hil: notice: --base is now --kernel (the old spelling still works)\n"]);
      notices.length = 0;
      await t.rejects(parse(["--base", "debian:6.1", "--kernel", "debian:6.12"]), {
        message: "--base is the old spelling of --kernel: give --kernel once, without --base",
      });
      await t.rejects(parse(["--kernel", "debian:6.12", "--base", "debian:6.1"]), {
        message: /old spelling of --kernel/,
      });
    });
    const out: string[] = [];
    await t.rejects(program(out).parseAsync(["node", "hil", "kernel", "build", "--help"]));
    t.notMatch(out.join(""), /--base/, "the old spelling is not in the help");
  },
);
