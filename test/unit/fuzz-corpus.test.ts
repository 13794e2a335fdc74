/**
 * Replays every stored fuzz input (test/fixtures/fuzz/<target>/corpus) and every reproducer of a
 * finding (.../crashes) through its harness: none may crash, reach guest memory the guest did not
 * map, or leak an fd. So each finding of `npm run fuzz` stays a regression test once fixed.
 * HIL_FUZZ_TARGET=<name> replays one target's only.
 */
import { existsSync, readdirSync } from "node:fs";
import t from "tap";
import { readInputs, Watchdog } from "../fuzz/engine.ts";
import { catchStrayErrors, runOne, warmUp } from "../fuzz/run-one.ts";
import { fixtureDir, TARGETS } from "../fuzz/targets/index.ts";

catchStrayErrors(true);
t.teardown(() => catchStrayErrors(false));

const only = process.env.HIL_FUZZ_TARGET;
for (const target of TARGETS.filter((x) => !only || x.name === only)) {
  t.test(`${target.name}: the stored corpus and every reproducer run clean`, async (t) => {
    // an input that blocks the event loop would stop this test for good: the watchdog kills it
    const watchdog = await Watchdog.start(target, fixtureDir(target.name, "crashes"));
    t.teardown(() => watchdog.stop());
    await warmUp(target);
    const corpus = readInputs(fixtureDir(target.name, "corpus"));
    const crashes = readInputs(fixtureDir(target.name, "crashes"));
    t.ok(corpus.length > 0, `a corpus is stored (${corpus.length} inputs)`);
    const bad: string[] = [];
    for (const [kind, inputs] of [
      ["corpus", corpus],
      ["reproducer", crashes],
    ] as const) {
      for (const [i, input] of inputs.entries()) {
        const o = await watchdog.around(input, () => runOne(target, input));
        const what = [
          o.crash,
          o.outOfBounds.length > 0 ? `out of bounds: ${o.outOfBounds.join("; ")}` : undefined,
          o.fdLeaks.length > 0 ? `fds leaked: ${o.fdLeaks.join(", ")}` : undefined,
        ].filter(Boolean);
        if (what.length > 0) bad.push(`${kind} ${i}: ${what.join("; ")}`);
      }
    }
    t.same(bad, [], `${corpus.length} corpus inputs and ${crashes.length} reproducers: no finding`);
  });
}

t.test("the reproducer directories hold inputs only", async (t) => {
  for (const target of TARGETS) {
    const dir = fixtureDir(target.name, "crashes");
    const names = existsSync(dir) ? readdirSync(dir) : [];
    t.same(
      names.filter((n) => !/^[0-9a-f]{40}$/.test(n)),
      [],
      `${target.name}: files named by their SHA-1, as the engine saves them`,
    );
  }
});
