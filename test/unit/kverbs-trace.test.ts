// The hil_kverbs trace parser: the schema of every record, the errors that name the bad line, and
// the derived views (posted WRs with their signaled flags and bad_wr, completions per queue,
// payload sums). The sample lines are records hil_kverbs wrote in a debian:6.12 guest on siw.
import t from "tap";
import { errorLines, warningLines } from "../../harness/image/kmod.ts";
import { commandLine } from "../../harness/protocol/commands.ts";
import {
  completionsOf,
  parseTrace,
  payloadSum,
  postedWrs,
  recordsOf,
  WC_WR_FLUSH_ERR,
} from "../../harness/protocol/trace.ts";

const SAMPLE = `{"seq":0,"ns":1124487,"ev":"hello","version":1,"release":"6.12.95","pid":85}
{"seq":1,"ns":1378810,"ev":"ibdev","name":"siw0","action":"add"}
{"seq":2,"ns":76971364,"ev":"cmd","id":1,"line":"device name=siw0"}
{"seq":3,"ns":77186533,"ev":"device","name":"siw0","how":"name","node_type":4,"max_qp_wr":32768,"max_cqe":3276800,"max_qp_rd_atom":128}
{"seq":4,"ns":77246369,"ev":"done","id":1,"op":"device","rc":0,"us":308}
{"seq":20,"ns":117770003,"ev":"create","kind":"qp","name":"a","qp_num":1,"cm":true,"scq":"c1","rcq":"c1","sig_all":false,"max_send_wr":64,"max_recv_wr":64,"max_send_sge":1,"max_inline_data":0,"cmd":6}
{"seq":21,"ns":134032655,"ev":"cm","id":"L","child":true,"event":"CONNECT_REQUEST","code":4,"status":0}
{"seq":27,"ns":110827223,"ev":"post","call":1,"qp":"b","queue":"rq","op":"recv","wr_id":100,"count":4,"index":0,"len":4096}
{"seq":28,"ns":112836743,"ev":"post_ret","call":1,"rc":0,"bad":null}
{"seq":31,"ns":113520010,"ev":"post","call":2,"qp":"a","queue":"sq","op":"send","wr_id":1,"count":4,"index":0,"len":100,"signal":"last"}
{"seq":32,"ns":113924393,"ev":"post_ret","call":2,"rc":0,"bad":null}
{"seq":35,"ns":130343281,"ev":"cqe","cq":"c2","qp":"b","queue":"rq","wr_id":100,"status":0,"status_name":"SUCCESS","opcode":128,"opcode_name":"RECV","qp_num":2,"vendor_err":0,"byte_len":100,"call":1,"sum":3540699901}
{"seq":36,"ns":130976464,"ev":"cqe","cq":"c2","qp":"b","queue":"rq","wr_id":101,"status":0,"status_name":"SUCCESS","opcode":128,"opcode_name":"RECV","qp_num":2,"vendor_err":0,"byte_len":100,"call":1,"sum":2261489905}
{"seq":39,"ns":136027767,"ev":"cqe","cq":"c1","qp":"a","queue":"sq","wr_id":4,"status":0,"status_name":"SUCCESS","opcode":0,"opcode_name":"SEND","qp_num":1,"vendor_err":0,"byte_len":100,"call":2}
{"seq":63,"ns":1165436604,"ev":"modify","call":7,"qp":"b","state":"ERR"}
{"seq":64,"ns":1165948634,"ev":"cqe","cq":"c2","qp":"b","queue":"rq","wr_id":102,"status":5,"status_name":"WR_FLUSH_ERR","opcode":128,"opcode_name":"RECV","qp_num":2,"vendor_err":0,"byte_len":0,"call":1}
{"seq":69,"ns":1167394621,"ev":"modify_ret","call":7,"rc":0}
{"seq":72,"ns":1167518670,"ev":"drain","call":8,"qp":"b","which":"qp"}
{"seq":75,"ns":1174841583,"ev":"drain_ret","call":8,"us":7303}
{"seq":78,"ns":1175238630,"ev":"query","qp":"b","rc":0,"state":"ERR","cur_state":"UNSET"}
{"seq":90,"ns":1175438177,"ev":"poll","cq":"c1","got":0,"min":0,"total":3}
{"seq":91,"ns":1175442368,"ev":"done","id":19,"op":"poll","rc":-110,"us":15,"err":"0 of 4 completions in 1000 ms"}
{"seq":92,"ns":1175442369,"ev":"destroy","kind":"qp","name":"b","rc":0,"why":"reset","unfinished":[{"queue":"rq","wr_id":103}],"unfinished_count":1}
{"seq":93,"ns":1175442370,"ev":"reject","line":"frobnicate","why":"unknown operation"}
{"seq":94,"ns":1175442371,"ev":"overflow"}
`;

t.test("a real trace parses into typed records", async (t) => {
  const records = parseTrace(SAMPLE);
  t.equal(records.length, 25);
  t.equal(recordsOf(records, "hello")[0]?.release, "6.12.95");
  t.same(
    recordsOf(records, "done").map((d) => [d.op, d.rc]),
    [
      ["device", 0],
      ["poll", -110],
    ],
  );
  t.equal(recordsOf(records, "done")[1]?.err, "0 of 4 completions in 1000 ms");
  const flush = completionsOf(records, "b", "rq").filter((c) => c.status === WC_WR_FLUSH_ERR);
  t.same(
    flush.map((c) => c.wr_id),
    [102],
  );
  t.same(recordsOf(records, "destroy")[0]?.unfinished, [{ queue: "rq", wr_id: 103 }]);
  t.same(parseTrace(""), []);
});

t.test("bad traces are refused naming the line", async (t) => {
  const good = '{"seq":0,"ns":1,"ev":"overflow"}\n';
  t.throws(() => parseTrace(`${good}not json\n`), { name: "HilError", message: /line 2 is not JSON/ });
  t.throws(() => parseTrace(`${good}{"seq":1,"ns":2,"ev":"nosuch"}\n`), {
    message: /line 2 is not a valid record/,
  });
  t.throws(
    () =>
      parseTrace(
        '{"seq":0,"ns":1,"ev":"cqe","cq":"c","qp":"a","queue":"xq","wr_id":1,"status":0,"status_name":"S","opcode":0,"opcode_name":"SEND","qp_num":1,"vendor_err":0,"byte_len":0,"call":1}\n',
      ),
    { message: /line 1 is not a valid record/, detail: /queue/ },
  );
  t.throws(() => parseTrace('{"seq":0,"ns":1,"ev":"overflow","extra":1}\n'), {
    message: /not a valid record/,
  });
  t.throws(() => parseTrace('{"seq":0,"ns":1,"ev":"overflow"}'), { message: /middle of a line/ });
  t.throws(() => parseTrace(`${good}${good}`), { message: /seq 0 after 0/ });
});

t.test("post calls expand into WRs with their signaled flags and bad_wr", async (t) => {
  const trace = [
    '{"seq":0,"ns":0,"ev":"create","kind":"qp","name":"s","qp_num":9,"cm":false,"scq":"c","rcq":"c","sig_all":true,"max_send_wr":8,"max_recv_wr":8,"max_send_sge":1,"max_inline_data":0,"cmd":1}',
    '{"seq":1,"ns":0,"ev":"post","call":1,"qp":"a","queue":"sq","op":"send","wr_id":10,"count":3,"index":0,"len":8,"signal":"last"}',
    '{"seq":2,"ns":0,"ev":"post_ret","call":1,"rc":0,"bad":null}',
    '{"seq":3,"ns":0,"ev":"post","call":2,"qp":"a","queue":"sq","op":"write","wr_id":20,"count":4,"index":0,"len":8,"signal":"2"}',
    '{"seq":4,"ns":0,"ev":"post_ret","call":2,"rc":-12,"bad":2}',
    '{"seq":5,"ns":0,"ev":"post","call":3,"qp":"s","queue":"sq","op":"send","wr_id":30,"count":2,"index":0,"len":8,"signal":"none"}',
    '{"seq":6,"ns":0,"ev":"post_ret","call":3,"rc":0,"bad":null}',
    '{"seq":7,"ns":0,"ev":"post","call":4,"qp":"a","queue":"rq","op":"recv","wr_id":40,"count":2,"index":0,"len":8}',
    '{"seq":8,"ns":0,"ev":"post_ret","call":4,"rc":-22,"bad":null}',
  ].join("\n");
  const wrs = postedWrs(parseTrace(`${trace}\n`));
  t.same(
    wrs.map((w) => [w.qp, w.wrId, w.signaled, w.accepted]),
    [
      ["a", 10, false, true],
      ["a", 11, false, true],
      ["a", 12, true, true],
      ["a", 20, false, true],
      ["a", 21, true, true],
      ["a", 22, false, false],
      ["a", 23, true, false],
      // sig=all QP: signaled whatever the post asked
      ["s", 30, true, true],
      ["s", 31, true, true],
      // failed without bad_wr: nothing known posted
      ["a", 40, true, false],
      ["a", 41, true, false],
    ],
  );
  t.equal(wrs[5]?.rc, -12);
  t.equal(wrs[0]?.at, 1, "the record index of the post");
});

t.test("payload sums match what the module computed", async (t) => {
  // from the sample: SEND wr_id 1 and 2, 100 bytes each, landed in receives 100 and 101
  t.equal(payloadSum(1, 100), 3540699901);
  t.equal(payloadSum(2, 100), 2261489905);
  t.equal(payloadSum(0, 0), 0x811c9dc5);
});

t.test("command lines", async (t) => {
  t.equal(
    commandLine("post_send", { qp: "a", wr_id: 1, len: undefined, op: "write" }),
    "post_send qp=a wr_id=1 op=write",
  );
  t.equal(commandLine("reset"), "reset");
});

t.test("compiler output: errors with their source line, warnings", async (t) => {
  const out = [
    "  CC [M]  /tmp/x/src/bad.c",
    "/tmp/x/src/bad.c:3:9: error: 'nosuch' undeclared (first use in this function)",
    "    3 |  return nosuch;",
    "      |         ^~~~~~",
    "/tmp/x/src/bad.c:4:1: warning: control reaches end of non-void function [-Wreturn-type]",
    'ERROR: modpost: "missing_symbol" [/tmp/x/src/bad.ko] undefined!',
    "make[2]: *** [scripts/Makefile.build:243: /tmp/x/src/bad.o] Error 1",
  ];
  t.same(errorLines(out), [out[1], out[2], out[3], out[5]]);
  t.same(warningLines(out), [out[4]]);
});

t.test("fast registration, invalidation and bad= records", async (t) => {
  // the shapes hil_kverbs writes for post_send op=reg_mr/local_inv/send_inv and bad=<i> (siw, 6.12)
  const trace = [
    '{"seq":0,"ns":0,"ev":"device","name":"siw0","how":"addr","node_type":4,"max_qp_wr":32768,"max_cqe":3276800,"max_qp_rd_atom":128,"max_send_sge":6,"max_recv_sge":6,"max_fast_reg_page_list_len":256}',
    '{"seq":1,"ns":0,"ev":"mr","qp":"a","mr":0,"action":"alloc","lkey":1899568640,"rkey":1899568640}',
    '{"seq":2,"ns":0,"ev":"mr","qp":"a","mr":0,"action":"map","lkey":1899568641,"rkey":1899568641}',
    '{"seq":3,"ns":0,"ev":"post","call":5,"qp":"a","queue":"sq","op":"reg_mr","wr_id":710,"count":1,"index":0,"len":4096,"signal":"none","mr":0,"access":"local_write,remote_read,remote_write"}',
    '{"seq":4,"ns":0,"ev":"post_ret","call":5,"rc":0,"bad":null}',
    '{"seq":5,"ns":0,"ev":"post","call":6,"qp":"a","queue":"sq","op":"local_inv","wr_id":712,"count":2,"index":0,"len":64,"signal":"all","mr":0}',
    '{"seq":6,"ns":0,"ev":"post_ret","call":6,"rc":0,"bad":null}',
    '{"seq":7,"ns":0,"ev":"cqe","cq":"cqa","qp":"a","queue":"sq","wr_id":712,"status":0,"status_name":"SUCCESS","opcode":6,"opcode_name":"LOCAL_INV","qp_num":1,"vendor_err":0,"byte_len":0,"call":6}',
    '{"seq":8,"ns":0,"ev":"cqe","cq":"cqb","qp":"b","queue":"rq","wr_id":801,"status":0,"status_name":"SUCCESS","opcode":128,"opcode_name":"RECV","qp_num":2,"vendor_err":0,"byte_len":32,"call":3,"inv":972194817,"sum":1}',
    '{"seq":9,"ns":0,"ev":"post","call":7,"qp":"b","queue":"rq","op":"recv","wr_id":900,"count":3,"index":0,"len":4096,"invalid":1}',
    '{"seq":10,"ns":0,"ev":"post_ret","call":7,"rc":-22,"bad":1}',
    '{"seq":11,"ns":0,"ev":"mr","qp":"a","mr":0,"action":"dereg","rc":0}',
  ];
  const records = parseTrace(`${trace.join("\n")}\n`);
  t.equal(recordsOf(records, "device")[0]?.max_send_sge, 6);
  t.same(
    recordsOf(records, "mr").map((m) => [m.action, m.rkey, m.rc]),
    [
      ["alloc", 1899568640, undefined],
      ["map", 1899568641, undefined],
      ["dereg", undefined, 0],
    ],
  );
  t.equal(completionsOf(records, "b", "rq")[0]?.inv, 972194817, "the invalidated rkey of a SEND_WITH_INV");
  const wrs = postedWrs(records);
  t.same(
    wrs.map((w) => [w.op, w.wrId, w.signaled, w.accepted, w.invalid, w.mr]),
    [
      ["reg_mr", 710, false, true, false, 0],
      ["local_inv", 712, true, true, false, 0],
      ["local_inv", 713, true, true, false, 1],
      ["recv", 900, true, true, false, undefined],
      ["recv", 901, true, false, true, undefined],
      ["recv", 902, true, false, false, undefined],
    ],
    "MR numbers count up per WR; the invalid WR and those after it were not posted",
  );
  t.throws(() => parseTrace(`${trace[1]?.replace('"alloc"', '"free"')}\n`), {
    message: /not a valid record/,
    detail: /action/,
  });
  t.throws(() => parseTrace(`${trace[3]?.replace('"reg_mr"', '"bind_mw"')}\n`), {
    message: /not a valid record/,
    detail: /op/,
  });
  t.throws(() => parseTrace(`${trace[9]?.replace('"invalid":1', '"invalid":-1')}\n`), {
    message: /not a valid record/,
    detail: /invalid/,
  });
});
