// The command language's table on both sides: harness/protocol/commands.ts's COMMAND_KEYS (what
// commandLine's types are made of) against guest/common/commands.def (what the executors' parsers
// are built from), parsed here: every operation, every key, which keys are required.
import { readFileSync } from "node:fs";
import t from "tap";
import { COMMAND_KEYS } from "../../harness/protocol/commands.ts";
import { commandTableDifferences, parseCommandsDef } from "../support/commands-def.ts";

const DEF_PATH = new URL("../../guest/common/commands.def", import.meta.url);
const DEF = readFileSync(DEF_PATH, "utf8");

/** COMMAND_KEYS as plain objects, to change. */
function tableCopy(): Record<string, Record<string, boolean>> {
  return JSON.parse(JSON.stringify(COMMAND_KEYS));
}

t.test("commands.def: every operation with its keys, the QP keys macro expanded", async (t) => {
  const def = parseCommandsDef(DEF);
  t.same([...def.keys()].slice(0, 3), ["device", "pd", "cq"], "in file order");
  t.same(Object.fromEntries(def.get("post_recv") ?? []), {
    qp: true,
    wr_id: true,
    count: false,
    len: false,
    batch: false,
    bad: false,
  });
  t.same([...(def.get("listen")?.keys() ?? [])].slice(-7), [
    "sq",
    "rq",
    "sge",
    "inline",
    "buf",
    "max_wrs",
    "sig",
  ]);
  t.same(def.get("reset")?.size, 0);
});

t.test("COMMAND_KEYS is commands.def's table", async (t) => {
  t.same(commandTableDifferences(parseCommandsDef(DEF), COMMAND_KEYS), []);
});

t.test("a wrong, missing or extra key, a required flag or an operation that differs is named", async (t) => {
  const def = parseCommandsDef(DEF);
  const renamed = tableCopy();
  delete renamed.post_send?.len;
  if (renamed.post_send) renamed.post_send.lenn = false;
  t.same(commandTableDifferences(def, renamed), [
    "post_send: key len of commands.def is missing",
    "post_send: key lenn is not in commands.def",
  ]);
  const optional = tableCopy();
  if (optional.modify) optional.modify.state = false;
  t.same(commandTableDifferences(def, optional), ["modify: key state is required in commands.def"]);
  const required = tableCopy();
  if (required.drain) required.drain.which = true;
  t.same(commandTableDifferences(def, required), ["drain: key which is optional in commands.def"]);
  const noOp = tableCopy();
  delete noOp.mark;
  t.same(commandTableDifferences(def, noOp), ["mark: in commands.def, not in COMMAND_KEYS"]);
  const newOp = parseCommandsDef(`${DEF}\nHIL_COMMAND(frob, "!x y", "frobnicate")\n`);
  t.same(commandTableDifferences(newOp, COMMAND_KEYS), ["frob: in commands.def, not in COMMAND_KEYS"]);
  const lessDef = parseCommandsDef(DEF.replace('HIL_COMMAND(mark, "!id",', 'HIL_COMMAND(mark, "",'));
  t.same(commandTableDifferences(lessDef, COMMAND_KEYS), ["mark: key id is not in commands.def"]);
});

t.test("a commands.def the parser cannot read is an error naming the entry", async (t) => {
  t.throws(() => parseCommandsDef('HIL_COMMAND(pd, "!name" NO_SUCH_KEYS, "x")'), {
    message: "HIL_COMMAND(pd): NO_SUCH_KEYS is not a string macro of commands.def",
  });
  t.throws(() => parseCommandsDef('HIL_COMMAND(pd, "!name name", "x")'), {
    message: "HIL_COMMAND(pd): key name is listed twice",
  });
  t.throws(() => parseCommandsDef('HIL_COMMAND(pd, "x", "a")\nHIL_COMMAND(pd, "y", "z")'), {
    message: "HIL_COMMAND(pd): the operation is listed twice",
  });
  t.throws(() => parseCommandsDef('/* HIL_COMMAND(pd, "x", "y") */'), {
    message: "commands.def has no HIL_COMMAND entry",
  });
});
