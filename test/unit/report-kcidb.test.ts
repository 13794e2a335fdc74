// KCIDB v5.0 JSON of a run directory: ids, paths and statuses as the schema wants them, the
// patchset hash KCIDB defines, XFAIL as a waived FAIL, and validation against the vendored schema
// with ajv (a dev dependency to install: the validation test fails saying so while it is missing).
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { KCIDB_ORIGIN, patchsetHash, renderKcidb } from "../../harness/report/kcidb.ts";
import { validateKcidb } from "../../harness/report/kcidb-validate.ts";
import { loadRunDir } from "../../harness/rundir/read.ts";
import { PATCH_HASHES, syntheticRecord, writeRunDir } from "../fixtures/rundir/synthetic.ts";

const FIXTURE = fileURLToPath(new URL("../fixtures/rundir", import.meta.url));
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

t.test("the real run", async (t) => {
  const doc = await renderKcidb(await loadRunDir(FIXTURE), { urlBase: "https://ci.example.org/runs/42/" });
  t.same(doc.version, { major: 5, minor: 0 });
  t.equal(doc.checkouts[0]?.patchset_hash, "", "no series: the empty patchset hash");
  t.equal(doc.builds[0]?.checkout_id, doc.checkouts[0]?.id);
  const ids = new Set(doc.tests.map((x) => x.id));
  t.equal(ids.size, doc.tests.length, "test ids are unique");
  for (const x of doc.tests) {
    t.match(x.id, new RegExp(`^${KCIDB_ORIGIN}:`));
    t.match(x.path, /^([a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*)?$/);
    t.ok(["FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"].includes(x.status), `${x.path}: ${x.status}`);
  }
  const hang = doc.tests.find((x) => x.path === "erdma_hil.fault-stall-sq-drain.linux.rule_hang");
  t.match(hang, { status: "FAIL", waived: true, misc: { hil_verdict: "XFAIL" } }, "XFAIL is a waived FAIL");
  t.match(hang?.log_excerpt, /__ib_drain_sq/);
  const scen = doc.tests.find((x) => x.path === "erdma_hil.fault-stall-sq-drain.linux");
  t.equal(scen?.log_url, "https://ci.example.org/runs/42/traces/fault-stall-sq-drain.jsonl");
  t.same(
    scen?.output_files?.map((f) => f.name),
    ["fault-stall-sq-drain.jsonl", "fault-stall-sq-drain.hw.jsonl"],
  );
});

t.test("patchsets: recorded, from <run>/series, or unknown", async (t) => {
  t.equal(patchsetHash([]), "");
  t.equal(patchsetHash(PATCH_HASHES), sha256(`${PATCH_HASHES[0]}\n${PATCH_HASHES[1]}\n`));
  const doc = await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())));
  t.equal(doc.checkouts[0]?.patchset_hash, patchsetHash(PATCH_HASHES));
  t.same(
    ((doc.checkouts[0]?.patchset_files ?? []) as Array<{ name: string }>).map((f) => f.name),
    ["0001-a.patch", "0002-b.patch"],
  );
  const { series: _, ...unrecorded } = syntheticRecord();
  const dir = await writeRunDir(unrecorded);
  const unknown = await renderKcidb(await loadRunDir(dir));
  t.notOk(
    "patchset_hash" in (unknown.checkouts[0] ?? {}),
    "a series the run does not carry: no hash claimed",
  );
  await mkdir(join(dir, "series"));
  await writeFile(join(dir, "series", "0001-x.patch"), "patch one\n");
  const fromDir = await renderKcidb(await loadRunDir(dir));
  t.equal(fromDir.checkouts[0]?.patchset_hash, sha256(`${sha256("patch one\n")}\n`));
});

t.test("every verdict's status", async (t) => {
  const doc = await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())));
  const by = (p: string) => doc.tests.find((x) => x.path === `erdma_hil.${p}`);
  t.equal(by("s-fail.ib")?.status, "FAIL");
  t.equal(by("s-fail.ib")?.waived, undefined);
  t.equal(by("s-error.ib")?.status, "ERROR");
  t.equal(by("s-miss.ib")?.status, "MISS");
  t.equal(by("s-skip.ib")?.status, "SKIP");
  t.match(by("s-xpass.ib"), { status: "PASS", comment: /^XPASS/ });
  const broken = await renderKcidb(
    await loadRunDir(
      await writeRunDir({
        kernel: "debian:6.12",
        results: [{ id: "suite", title: "the drain suite runs", verdict: "ERROR", reason: "boot failed" }],
      }),
    ),
  );
  t.match(broken.tests, [{ path: "erdma_hil", status: "MISS" }], "a suite that could not run is a MISS");
});

t.test("valid against the vendored KCIDB v5.0 schema (needs ajv, ajv-formats)", async (t) => {
  const docs = [
    await renderKcidb(await loadRunDir(FIXTURE)),
    await renderKcidb(await loadRunDir(await writeRunDir(syntheticRecord())), {
      urlBase: "https://x.example/r",
    }),
  ];
  for (const doc of docs) {
    const r = await validateKcidb(doc);
    t.same(r.errors, [], "no schema errors");
    t.equal(r.valid, true);
  }
  const bad = structuredClone(docs[0]) as unknown as { tests: Array<{ status: string }> };
  (bad.tests[0] as { status: string }).status = "XFAIL";
  const r = await validateKcidb(bad);
  t.equal(r.valid, false, "the schema refuses a status it does not know");
  t.match(r.errors.join("\n"), /\/tests\/0\/status/);
});
