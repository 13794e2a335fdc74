import t from "tap";
import {
  type ConfigRequest,
  effectiveRequests,
  explainMismatch,
  findMismatches,
  parseDotConfig,
  parseFragment,
  parseSymbolBlock,
  type SymbolDefinition,
} from "../../harness/kernel/kconfig.ts";

const fragment = [
  "# a comment",
  "CONFIG_INFINIBAND=m",
  "CONFIG_PRINTK=y",
  "",
  "# CONFIG_SMP is not set",
  "CONFIG_NET=n",
  'CONFIG_CMDLINE="console=ttyS0 quiet"',
  "CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=10",
  "CONFIG_PHYSICAL_START=0x1000000",
  "  CONFIG_INDENTED=y  ",
].join("\n");

t.test("fragment parsing: values, not-set lines, strings, numbers, line numbers", async (t) => {
  const r = parseFragment(fragment, "my.config");
  t.same(
    r.map((x) => [x.name, x.value, x.line]),
    [
      ["INFINIBAND", "m", 2],
      ["PRINTK", "y", 3],
      ["SMP", "n", 5],
      ["NET", "n", 6],
      ["CMDLINE", '"console=ttyS0 quiet"', 7],
      ["DEFAULT_HUNG_TASK_TIMEOUT", "10", 8],
      ["PHYSICAL_START", "0x1000000", 9],
      ["INDENTED", "y", 10],
    ],
  );
  t.ok(r.every((x) => x.file === "my.config"));
});

t.test("a line that is not an option is an error naming file and line", async (t) => {
  t.throws(() => parseFragment("CONFIG_A=y\nINFINIBAND=m\n", "bad.config"), {
    message: /not a Kconfig option line: "INFINIBAND=m"/,
    where: "bad.config:2",
  });
  t.throws(() => parseFragment("CONFIG_A=\n", "empty.config"), {
    message: /not a Kconfig option line/,
    where: "empty.config:1",
  });
});

t.test("the last fragment that names an option decides it", async (t) => {
  const base = parseFragment("CONFIG_A=y\nCONFIG_B=m\n", "base.config");
  const user = parseFragment("# CONFIG_A is not set\n", "user.config");
  const eff = effectiveRequests([base, user]);
  t.same(
    eff.map((r) => [r.name, r.value, r.file]),
    [
      ["A", "n", "user.config"],
      ["B", "m", "base.config"],
    ],
  );
});

const finalConfig = `#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_INFINIBAND=m
CONFIG_PRINTK=y
# CONFIG_SMP is not set
CONFIG_CMDLINE="console=ttyS0"
CONFIG_DEFAULT_HUNG_TASK_TIMEOUT=120
CONFIG_PHYSICAL_START=0x1000000
CONFIG_INDENTED=m
`;

t.test(".config parsing", async (t) => {
  const c = parseDotConfig(finalConfig);
  t.equal(c.get("INFINIBAND"), "m");
  t.equal(c.get("SMP"), "n");
  t.equal(c.get("CMDLINE"), '"console=ttyS0"');
  t.equal(c.get("NET"), undefined);
});

t.test("dropped and changed options are found; n is honoured by an absent option", async (t) => {
  const requests = parseFragment(`${fragment}\nCONFIG_NO_SUCH_THING=y\n`, "my.config");
  const mismatches = findMismatches(requests, parseDotConfig(finalConfig));
  t.same(
    mismatches.map((m) => [m.request.name, m.request.value, m.actual, m.request.line]),
    [
      ["CMDLINE", '"console=ttyS0 quiet"', '"console=ttyS0"', 7],
      ["DEFAULT_HUNG_TASK_TIMEOUT", "10", "120", 8],
      ["INDENTED", "y", "m", 10],
      ["NO_SUCH_THING", "y", undefined, 11],
    ],
  );
});

const kconfigText = `# SPDX
menuconfig INFINIBAND
\ttristate "InfiniBand support"
\tdepends on HAS_IOMEM && HAS_DMA
\tdepends on NET

if INFINIBAND

config INFINIBAND_ERDMA
\ttristate "Alibaba Elastic RDMA Adapter (ERDMA) support"
\tdepends on PCI_MSI && 64BIT
\tdepends on INFINIBAND_ADDR_TRANS
\thelp
\t  This is a driver.

config INFINIBAND_ADDR_TRANS
\tbool "RDMA/CM"
\tdefault y
endif
`;

t.test("a symbol's Kconfig block: type, enclosing ifs and dependencies", async (t) => {
  t.same(parseSymbolBlock(kconfigText, "INFINIBAND_ERDMA"), {
    line: 9,
    type: "tristate",
    insideIf: ["INFINIBAND"],
    dependsOn: ["PCI_MSI && 64BIT", "INFINIBAND_ADDR_TRANS"],
  });
  t.same(parseSymbolBlock(kconfigText, "INFINIBAND"), {
    line: 2,
    type: "tristate",
    insideIf: [],
    dependsOn: ["HAS_IOMEM && HAS_DMA", "NET"],
  });
  t.same(parseSymbolBlock(`if A\nif B\nendif\nconfig X\n\tbool "x"\nendif\n`, "X")?.insideIf, ["A"]);
  t.equal(parseSymbolBlock(kconfigText, "INFINIBAND_ERDMA_X"), undefined);
});

/** The single request of a one-option fragment. */
function request(text: string): ConfigRequest {
  const [r] = parseFragment(text, "frag.config");
  if (!r) throw new Error(`no request in ${text}`);
  return r;
}

function definition(file: string, name: string): SymbolDefinition {
  const block = parseSymbolBlock(kconfigText, name);
  if (!block) throw new Error(`no ${name} in the test Kconfig`);
  return { file, ...block };
}

t.test("explanations name option, fragment, line and the reason", async (t) => {
  t.equal(
    explainMismatch(
      { request: request("CONFIG_NO_SUCH_THING=y\n"), actual: undefined },
      undefined,
      "6.12.95",
    ),
    'CONFIG_NO_SUCH_THING=y (frag.config:1): the symbol does not exist in Linux 6.12.95 (no "config NO_SUCH_THING" in any Kconfig file)',
  );
  const def = definition("drivers/infiniband/hw/erdma/Kconfig", "INFINIBAND_ERDMA");
  const finalConfig = parseDotConfig("CONFIG_INFINIBAND=m\nCONFIG_64BIT=y\n# CONFIG_PCI_MSI is not set\n");
  const text = explainMismatch(
    { request: request("\nCONFIG_INFINIBAND_ERDMA=y\n"), actual: undefined },
    def,
    "6.12.95",
    finalConfig,
  );
  t.equal(
    text,
    "CONFIG_INFINIBAND_ERDMA=y (frag.config:2): olddefconfig dropped it: a dependency is unmet or another option limits it; " +
      "drivers/infiniband/hw/erdma/Kconfig:9 requires INFINIBAND (enclosing if) && PCI_MSI && 64BIT && INFINIBAND_ADDR_TRANS; " +
      "in the final .config: INFINIBAND=m, PCI_MSI is not set, 64BIT=y, INFINIBAND_ADDR_TRANS is not set",
  );
  const cm = request("CONFIG_INFINIBAND_ADDR_TRANS=m\n");
  t.match(
    explainMismatch({ request: cm, actual: "y" }, definition("Kconfig", "INFINIBAND_ADDR_TRANS"), "6.12.95"),
    /is a bool .* cannot be a module/,
  );
  t.match(
    explainMismatch({ request: request("CONFIG_INFINIBAND_ERDMA=y\n"), actual: "m" }, def, "6.12.95"),
    /olddefconfig changed it to m/,
  );
});
