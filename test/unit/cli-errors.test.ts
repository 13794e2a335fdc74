// Bad input on the command line: one error line first, naming the option (or command) and where
// its help is, never a dump of the help text; a notice about what the run leaves out never comes
// before an error (a user reads the first line).
import t from "tap";
import { hil } from "../support/cli.ts";

const CASES: Array<{ args: string[]; error: RegExp }> = [
  {
    args: ["run", "--executor", "bogus"],
    error:
      /^hil: error: option '--executor <kind>' argument 'bogus' is invalid\. Allowed choices are kernel, user\. \(see hil run --help\)$/,
  },
  { args: ["bogus"], error: /^hil: error: unknown command 'bogus' \(see hil --help\)$/ },
  { args: ["run", "--nope"], error: /^hil: error: unknown option '--nope' \(see hil run --help\)$/ },
  {
    args: ["validate"],
    error: /^hil: error: required option '--series <mbox\|dir>' not specified \(see hil validate --help\)$/,
  },
  {
    args: ["cache", "export"],
    error: /^hil: error: missing required argument .* \(see hil cache export --help\)$/,
  },
  { args: ["run", "--kernel", "nope"], error: /^hil: error: .*nope is not a known base/ },
  { args: ["run", "--config", "nope"], error: /^hil: error: .*config fragment nope does not exist/ },
];

for (const c of CASES)
  t.test(`hil ${c.args.join(" ")}`, async (t) => {
    const r = await hil(c.args);
    t.equal(r.exitCode, 2, r.stderr);
    const lines = r.stderr.split("\n").filter(Boolean);
    t.match(lines[0], c.error, "the error is the first line");
    t.notMatch(r.stderr, /Usage: hil|Options:/, "no help text");
    t.equal(r.stdout, "", "nothing on stdout");
  });
