/**
 * The --device-rtl backend (harness/backend/rtl.ts): the options that pick it, the planted bugs it
 * takes by name, what contradicts it (one line each), what the boot gets, and its verdicts.json
 * record read back as an RTL run (not as the emulated device's).
 */
import t from "tap";
import { askedBackend, chooseDevice, readDevice, recordedDevice } from "../../harness/backend/registry.ts";
import { rtl } from "../../harness/backend/rtl.ts";

t.test("--device-rtl picks the RTL backend; its bugs by name, sorted", async (t) => {
  t.equal(askedBackend({ device: true, deviceRtl: true }).kind, "rtl");
  t.equal(askedBackend({ device: true }).kind, "emulated", "without it: the emulated device");
  const plain = chooseDevice({ device: true, deviceRtl: true });
  t.match(plain, { kind: "rtl", profileName: "erdma-reflush", bugs: [] });
  t.same(rtl.boot(plain as never), { profile: "erdma-reflush", rtl: { bugs: [] } });
  const bugs = chooseDevice({
    device: true,
    deviceRtl: "owner-stuck,flush-skip-wrap",
    deviceProfile: "erdma-2022",
  });
  t.match(bugs, { kind: "rtl", profileName: "erdma-2022", bugs: ["flush-skip-wrap", "owner-stuck"] });
  t.match(chooseDevice({ device: true, deviceRtl: "flush-before-success" }), {
    kind: "rtl",
    bugs: ["flush-before-success"],
  });
  t.match(rtl.option?.help, /flush-before-success: docs\/fpga\.md/, "the help lists every planted bug");
});

t.test("bad input: one line naming --device-rtl", async (t) => {
  t.throws(() => chooseDevice({ device: true, deviceRtl: "owner-stuck,nope" }), {
    message:
      '--device-rtl: no planted bug "nope" (known: owner-stuck, flush-skip-wrap, flush-before-success; none: the RTL as designed)',
  });
  t.throws(() => chooseDevice({ device: false, deviceRtl: true }), {
    message: /--device-rtl and --no-device/,
  });
  t.throws(() => chooseDevice({ device: true, deviceRtl: true, deviceSocket: "/tmp/s" }), {
    message: /--device-rtl and --device-socket contradict/,
  });
  t.throws(() => chooseDevice({ device: true, deviceRtl: true, target: "ssh://root@h" }), {
    message: /--device-rtl and --target contradict/,
  });
  t.throws(() => chooseDevice({ device: true, deviceRtl: true }, { driver: "siw" }), {
    message: /--driver siw/,
  });
});

t.test("its verdicts.json record reads back as an RTL run", async (t) => {
  const device = chooseDevice({ device: true, deviceRtl: "flush-skip-wrap" });
  const record = recordedDevice(device, "hw-trace.jsonl");
  t.same(record, { profile: "erdma-reflush", trace: "hw-trace.jsonl", rtl: "rtl+flush-skip-wrap" });
  const run = readDevice({ device: record });
  t.same(run, { kind: "rtl", profile: "erdma-reflush", bugs: ["flush-skip-wrap"] });
  t.same(rtl.runs?.rerunArgs(run as never, { absolute: (p) => p }), [
    "--device-rtl=flush-skip-wrap",
    "--device-profile",
    "erdma-reflush",
  ]);
  t.same(
    readDevice({ device: { profile: "erdma-reflush", trace: "hw-trace.jsonl" } }),
    {
      kind: "emulated",
      profile: "erdma-reflush",
    },
    "a record without rtl is the emulated device's",
  );
});
