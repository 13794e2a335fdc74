import { Command } from "commander";
import t from "tap";
import { shellJoin } from "../../harness/cli/boot-command.ts";
import { addKernelOptions, kernelRequest, parseSeconds } from "../../harness/cli/kernel-options.ts";

t.test("shellJoin passes one argument through and quotes several", async (t) => {
  t.equal(shellJoin(["dmesg | grep erdma"]), "dmesg | grep erdma");
  t.equal(shellJoin(["ls", "/sys/module/erdma"]), "ls /sys/module/erdma");
  t.equal(shellJoin(["echo", "a b", "it's"]), `echo 'a b' 'it'\\''s'`);
});

t.test("kernel options default to debian:6.12 and collect repeated fragments", async (t) => {
  const cmd = addKernelOptions(new Command("x").exitOverride());
  cmd.parse(["--config", "a.config", "--config", "b.config", "--series", "s.mbox"], { from: "user" });
  t.same(kernelRequest(cmd.opts()), {
    base: "debian:6.12",
    series: "s.mbox",
    configs: ["a.config", "b.config"],
  });
});

t.test("parseSeconds refuses what is not a positive number", async (t) => {
  t.equal(parseSeconds("2.5"), 2.5);
  t.throws(() => parseSeconds("0"), /positive number of seconds, got "0"/);
  t.throws(() => parseSeconds("soon"), /got "soon"/);
});
