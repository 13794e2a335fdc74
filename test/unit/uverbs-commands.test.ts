// hil-uverbs built on the host exactly as for the guest (gcc -Wall -Wextra -Werror against
// bookworm's libibverbs/librdmacm) and run here with no RDMA device: the command language, the
// refusals that stop a run before anything runs, and the records of commands that fail. Its
// output must parse with the trace schema.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { UVERBS_BINARY, UVERBS_EXIT } from "../../harness/executor/uverbs-driver.ts";
import { buildGuestTool } from "../../harness/image/guest-tools.ts";
import { parseTrace, recordsOf } from "../../harness/protocol/trace.ts";

t.setTimeout(120_000);

const dir = await mkdtemp(join(tmpdir(), "hil-uverbs-test-"));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const binary = await buildGuestTool(UVERBS_BINARY, dir);

function runHost(
  input: string,
  args: string[] = [],
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(binary, args, { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err && typeof err.code === "number" ? err.code : 0;
      resolve({ stdout, stderr, code });
    });
    // a run refused at its options exits before reading its input
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(input);
  });
}

t.test("bad lines and kernel-only commands: reject records naming the line, nothing runs", async (t) => {
  const r = await runHost(
    [
      "device name=siw0",
      "# a comment",
      "",
      "clear",
      "bench qp=a",
      "cq name=c poll=softirq",
      "post_send qp=a",
      "frobnicate x=1",
      "pd name=x bogus=1",
      "pd name=x name=y",
      "pd name=x rkey",
      `pd name=${"x".repeat(200)}`,
    ].join("\n"),
  );
  t.equal(r.code, UVERBS_EXIT.rejected);
  const tr = { records: parseTrace(r.stdout) };
  t.same(
    recordsOf(tr.records, "reject").map((x) => x.why),
    [
      "line 4: clear: not run by the user executor: it empties the kernel executor's trace buffer; this executor's trace is its stdout",
      "line 5: bench: not run by the user executor: it is the kernel executor's throughput loop (ib_process_cq_direct)",
      "line 6: cq: not run by the user executor: poll= other than direct is a kernel poll context; this executor polls with ibv_poll_cq (poll=direct)",
      "line 7: post_send: a required key is missing: wr_id=",
      "line 8: unknown operation",
      "line 9: pd: unknown key for this operation",
      "line 10: pd: key given twice",
      "line 11: pd: arguments are key=value",
      "line 12: line too long",
    ],
  );
  t.same(recordsOf(tr.records, "cmd"), [], "nothing ran");
  t.same(
    tr.records.map((x) => x.seq),
    tr.records.map((_, i) => i),
    "seq counts from 0",
  );
});

t.test("commands run in order, a failure does not stop the rest; ';' separates too", async (t) => {
  const r = await runHost("device name=nosuch\npd name=p; sleep ms=5 ;query qp=x\ndrain qp=x which=both\n");
  t.equal(r.code, UVERBS_EXIT.commandFailed);
  const tr = { records: parseTrace(r.stdout) };
  t.same(
    recordsOf(tr.records, "cmd").map((c) => c.line),
    ["device name=nosuch", "pd name=p", "sleep ms=5", "query qp=x", "drain qp=x which=both"],
  );
  t.same(
    recordsOf(tr.records, "done").map((d) => [d.id, d.op, d.rc, d.err]),
    [
      [1, "device", -19, "no RDMA device nosuch"],
      [2, "pd", -19, 'no device: run "device name=..." first'],
      [3, "sleep", 0, undefined],
      [4, "query", -2, "no QP x"],
      [5, "drain", -2, "no QP x"],
    ],
  );
  t.ok((recordsOf(tr.records, "done")[2]?.us ?? 0) >= 5000, "sleep slept");
  t.equal(recordsOf(tr.records, "hello")[0]?.version, 1);
});

t.test("options and files", async (t) => {
  const file = join(dir, "scenario.txt");
  await writeFile(file, "sleep ms=1\n");
  const r = await runHost("", ["-w", "500", file]);
  t.equal(r.code, 0);
  t.same(
    recordsOf(parseTrace(r.stdout), "done").map((d) => d.op),
    ["sleep"],
  );
  const bad = await runHost("", ["-w", "0"]);
  t.equal(bad.code, UVERBS_EXIT.rejected);
  t.match(bad.stderr, /usage: hil-uverbs/);
  const missing = await runHost("", [join(dir, "nonexistent")]);
  t.equal(missing.code, UVERBS_EXIT.rejected);
  t.match(missing.stderr, /nonexistent: No such file/);
});

t.test(
  "fast registration and local invalidation are refused with the reason; bad= and send_inv are known",
  async (t) => {
    const r = await runHost(
      [
        "device name=siw0",
        "post_send qp=a wr_id=1 op=reg_mr",
        "post_send qp=a wr_id=1 op=local_inv",
        "post_send qp=a wr_id=1 op=send_inv mr=2",
        "post_send qp=a wr_id=1 op=send access=local_write",
        "post_send qp=a wr_id=1 op=send_inv bad=0",
        "post_recv qp=b wr_id=1 count=4 bad=2",
      ].join("\n"),
    );
    t.equal(r.code, UVERBS_EXIT.rejected);
    t.same(
      recordsOf(parseTrace(r.stdout), "reject").map((x) => x.why),
      [
        "line 2: post_send: not run by the user executor: op=reg_mr is fast registration (IB_WR_REG_MR), a kernel verb; libibverbs has no IBV_WR_REG_MR",
        "line 3: post_send: not run by the user executor: op=local_inv (IBV_WR_LOCAL_INV) needs a memory window or fast-registered MR, which it does not make; libsiw and liberdma refuse the opcode",
        "line 4: post_send: not run by the user executor: access= and mr= name fast-registration MRs (op=reg_mr), a kernel verb",
        "line 5: post_send: not run by the user executor: access= and mr= name fast-registration MRs (op=reg_mr), a kernel verb",
      ],
      "lines 6 and 7 (send_inv, bad=) pass the check",
    );
  },
);
