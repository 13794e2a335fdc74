// The qemu device hil lava-run gives lava-run: its extra_options written so that Jinja's repr,
// PyYAML and pexpect's split_command_line give QEMU the arguments meant (the real chain is run by
// test/integration/lava-dispatcher-run.test.ts and checked by hil lava-run on every run).
import t from "tap";
import { lavaQemuOption, localDeviceOptions } from "../../harness/lava/local-device.ts";
import { HilError } from "../../util/errors.ts";

const DEVICE = [
  "-device",
  '{"driver":"vfio-user-pci","id":"erdma0","socket":{"type":"unix","path":"/tmp/hil-erdma-x/erdma.sock"}}',
];

t.test(
  "a JSON -device becomes QEMU's single-quoted JSON with escaped quotes, plain options stay",
  async (t) => {
    t.equal(lavaQemuOption(["-accel", "tcg"]), "-accel tcg");
    t.equal(
      lavaQemuOption(DEVICE),
      "-device {\\'driver\\':\\'vfio-user-pci\\',\\'id\\':\\'erdma0\\',\\'socket\\':{\\'type\\':\\'unix\\',\\'path\\':\\'/tmp/hil-erdma-x/erdma.sock\\'}}",
    );
    t.notOk(
      lavaQemuOption(DEVICE).includes('"'),
      "no double quote: Python's repr then writes a YAML double-quoted string",
    );
  },
);

t.test("arguments no quoting can carry through Jinja, YAML and pexpect are refused", async (t) => {
  for (const bad of ["/tmp/with space", 'a"b', "a\\b", '{"path":"it\'s"}'])
    t.throws(() => lavaQemuOption(["-L", bad]), HilError, JSON.stringify(bad));
});

t.test(
  "the device's options: memfd RAM of the job's size, TCG, firmware, no reboot, the device last",
  async (t) => {
    const { options, argv } = localDeviceOptions({
      memoryMb: 1024,
      firmwareDirs: ["/usr/share/seabios"],
      deviceArgs: DEVICE,
    });
    t.equal(options.length, argv.filter((a) => a.startsWith("-")).length, "one option a QEMU switch");
    t.ok(argv.includes("memory-backend-memfd,id=ram0,size=1024M,share=on"));
    t.ok(argv.includes("q35,memory-backend=ram0"));
    t.same(argv.slice(argv.indexOf("-accel"), argv.indexOf("-accel") + 2), ["-accel", "tcg"]);
    t.same(argv.slice(argv.indexOf("-L"), argv.indexOf("-L") + 2), ["-L", "/usr/share/seabios"]);
    t.ok(argv.includes("-no-reboot"), "a panic ends QEMU, and the job, at once");
    t.ok(argv.includes("-nodefaults"), "no default devices to hold SeaBIOS for half a minute");
    t.same(
      argv.slice(argv.indexOf("-serial"), argv.indexOf("-serial") + 2),
      ["-serial", "stdio"],
      "the console LAVA reads",
    );
    t.same(argv.slice(-2), [
      "-device",
      "{'driver':'vfio-user-pci','id':'erdma0','socket':{'type':'unix','path':'/tmp/hil-erdma-x/erdma.sock'}}",
    ]);
    const none = localDeviceOptions({ memoryMb: 512, firmwareDirs: [], deviceArgs: [] });
    t.notOk(none.argv.includes("-device"), "no device for a software driver");
  },
);
