import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { patchedTreeKey } from "../../harness/kernel/apply.ts";
import { kernelBuildKey, RECIPE_VERSION, SERIES_RECIPE_VERSION } from "../../harness/kernel/build.ts";
import { readFragment } from "../../harness/kernel/kconfig.ts";

const enc = (s: string) => Buffer.from(s);
const fragmentB = enc("CONFIG_B=y\n");
const fragmentC = enc("CONFIG_C=m\n");
const inputs = {
  baseKey: "b".repeat(64),
  seriesKey: "s".repeat(64),
  baseConfig: enc("CONFIG_A=y\n"),
  fragments: [fragmentB, fragmentC],
};

t.test("same inputs give the same key", async (t) => {
  t.equal(kernelBuildKey(inputs), kernelBuildKey({ ...inputs, fragments: [...inputs.fragments] }));
  t.equal(kernelBuildKey(inputs), kernelBuildKey({ ...inputs, recipe: RECIPE_VERSION }));
  t.match(kernelBuildKey(inputs), /^[0-9a-f]{64}$/);
});

t.test("every input changes the key", async (t) => {
  const key = kernelBuildKey(inputs);
  const variants = {
    base: { ...inputs, baseKey: "c".repeat(64) },
    series: { ...inputs, seriesKey: "t".repeat(64) },
    noSeries: { ...inputs, seriesKey: undefined },
    baseConfig: { ...inputs, baseConfig: enc("CONFIG_A=m\n") },
    fragmentBytes: { ...inputs, fragments: [enc("CONFIG_B=y\n"), enc("CONFIG_C=y\n")] },
    fragmentOrder: { ...inputs, fragments: [fragmentC, fragmentB] },
    fragmentDropped: { ...inputs, fragments: [fragmentB] },
    recipe: { ...inputs, recipe: "kernel-recipe-0" },
    seriesRecipe: { ...inputs, seriesRecipe: "series-recipe-1" },
  };
  const keys = new Set([key]);
  for (const [name, v] of Object.entries(variants)) {
    const k = kernelBuildKey(v);
    t.not(k, key, `${name} changes the key`);
    keys.add(k);
  }
  t.equal(keys.size, Object.keys(variants).length + 1, "all variants differ from each other");
});

t.test("the series recipe keys a base + series build alone", async (t) => {
  const base = { ...inputs, seriesKey: undefined };
  t.equal(
    kernelBuildKey(base),
    kernelBuildKey({ ...base, seriesRecipe: "series-recipe-1" }),
    "a base keeps its key",
  );
  t.equal(kernelBuildKey(inputs), kernelBuildKey({ ...inputs, seriesRecipe: SERIES_RECIPE_VERSION }));
});

t.test("the patched tree key follows base and series", async (t) => {
  t.equal(patchedTreeKey("a", "b"), patchedTreeKey("a", "b"));
  t.not(patchedTreeKey("a", "b"), patchedTreeKey("a", "c"));
  t.not(patchedTreeKey("a", "b"), patchedTreeKey("c", "b"));
});

t.test("fragments are read with their bytes and parsed, a missing one is an error", async (t) => {
  const dir = t.testdir({ "x.config": "CONFIG_X=y\n" });
  const f = readFragment(join(dir, "x.config"), "x.config");
  t.same(
    f.requests.map((r) => [r.name, r.value, r.file, r.line]),
    [["X", "y", "x.config", 1]],
  );
  writeFileSync(join(dir, "x.config"), "CONFIG_X=m\n");
  t.not(readFragment(join(dir, "x.config")).bytes.toString(), f.bytes.toString());
  t.throws(
    () => readFragment(join(dir, "none.config"), "none.config"),
    /config fragment none\.config does not exist/,
  );
});
