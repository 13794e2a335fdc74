// debian-image:X.Y, the prebuilt kernel: its name, the packages found from apt's answers, the
// drivers built out of tree, the guest's modules, config fragments checked against Debian's config,
// and the boot arguments standing in for what base.config sets.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import {
  ACCEPTED_BASE_FORMS,
  isNamedKernel,
  isPrebuiltBase,
  parseBaseSpec,
} from "../../harness/kernel/base-spec.ts";
import { BASE_CONFIG_PATH } from "../../harness/kernel/build.ts";
import {
  asksForSmp,
  parseDotConfig,
  readFragment,
  resolveFragmentPath,
  smpBootArgs,
} from "../../harness/kernel/kconfig.ts";
import { checkPrebuiltRequest } from "../../harness/kernel/prebuilt.ts";
import {
  baseConfigValue,
  checkFragmentsMet,
  prebuiltBootArgs,
  unmetRequests,
} from "../../harness/kernel/prebuilt-config.ts";
import {
  driversToBuild,
  GUEST_MODULES,
  INIT_MODULES,
  moduleClosure,
  moduleNameOfFile,
  OUT_OF_TREE_DRIVERS,
} from "../../harness/kernel/prebuilt-modules.ts";
import { outOfTreeKbuild, outOfTreeMakeArgs, vermagicRelease } from "../../harness/kernel/prebuilt-oot.ts";
import {
  dependsField,
  dependsGroups,
  imagesOfHeaders,
  namesFromHeadersDepends,
  type PrebuiltPackages,
  prebuiltKey,
} from "../../harness/kernel/prebuilt-packages.ts";
import { parsePrebuiltSpec } from "../../harness/kernel/prebuilt-spec.ts";
import { dmesgProblems } from "../../harness/probe/expectations.ts";
import { kernelRequestOf } from "../../harness/workflows/job/job.ts";
import { parsePlan } from "../../harness/workflows/matrix/plan.ts";
import { HilError } from "../../util/errors.ts";
import { hilErrorOf } from "../support/hil-error.ts";

// Lines of Debian's 6.12.95 amd64 image's /boot/config: the options the suite's fragments name.
const DEBIAN_6_12_CONFIG = parseDotConfig(
  readFileSync(new URL("../fixtures/kernel-config/debian-6.12.95-amd64.config", import.meta.url), "utf8"),
);

const fragment = (name: string) => readFragment(resolveFragmentPath(name), name);

t.test("debian-image: names are kernels, not paths, and not bases to build", async (t) => {
  t.ok(isPrebuiltBase("debian-image:6.12"));
  t.notOk(isPrebuiltBase("debian:6.12"));
  t.ok(isNamedKernel("debian-image:6.12") && isNamedKernel("debian:6.1"));
  t.notOk(isNamedKernel("./linux"));
  t.ok(
    ACCEPTED_BASE_FORMS.some((f) => f.startsWith("debian-image:6.12 ")),
    "--kernel's help names it",
  );
  t.same(parsePrebuiltSpec("debian-image:6.12"), {
    name: "debian-image:6.12",
    sourceBase: "debian:6.12",
    sourcePackage: "linux-source-6.12",
    suite: "bookworm-backports",
    flavour: "amd64",
  });
  t.throws(() => parsePrebuiltSpec("debian-image:5.10"), /unknown Debian kernel image debian-image:5\.10/);
  t.throws(() => parseBaseSpec("debian-image:6.12"), /no source tree to build from/);
  t.equal(kernelRequestOf({ kernel: "debian-image:6.12" }, "/somewhere").base, "debian-image:6.12");
  t.equal(kernelRequestOf({ kernel: "linux" }, "/somewhere").base, "/somewhere/linux");
});

t.test("a series on a prebuilt kernel is refused, naming the base to compile instead", async (t) => {
  try {
    checkPrebuiltRequest({ base: "debian-image:6.12", series: "/x.mbox", configs: [] });
    t.fail("accepted a series");
  } catch (err) {
    t.ok(err instanceof HilError);
    t.match((err as HilError).detail, "--kernel debian:6.12 --series /x.mbox");
  }
  t.throws(
    () => checkPrebuiltRequest({ base: "debian-image:6.12", configs: ["/no/such.config"] }),
    /config fragment \/no\/such\.config does not exist/,
  );
  t.equal(checkPrebuiltRequest({ base: "debian-image:6.12", configs: ["rxe"] }).name, "debian-image:6.12");
});

// apt-cache show linux-headers-6.12.95+deb12-amd64=6.12.95-1~bpo12+1 (bookworm-backports)
const HEADERS_SHOW = `Package: linux-headers-6.12.95+deb12-amd64
Source: linux
Version: 6.12.95-1~bpo12+1
Depends: linux-base (>= 4.12~), linux-headers-6.12.95+deb12-common (= 6.12.95-1~bpo12+1), linux-image-6.12.95+deb12-amd64 (= 6.12.95-1~bpo12+1) | linux-image-6.12.95+deb12-amd64-unsigned (= 6.12.95-1~bpo12+1), linux-kbuild-6.12.95+deb12, gcc-12
Size: 3035744

Package: linux-headers-6.12.95+deb12-amd64
Version: 6.12.90-1~bpo12+1
Depends: something-else
`;

t.test("the packages are read from the headers package's Depends", async (t) => {
  const depends = dependsField(HEADERS_SHOW);
  t.match(depends, /^linux-base/, "the first record's field");
  t.same(dependsGroups("a (>= 1), b | c (= 2),d"), [["a"], ["b", "c"], ["d"]]);
  t.same(namesFromHeadersDepends(depends, "amd64"), {
    common: "linux-headers-6.12.95+deb12-common",
    kbuild: "linux-kbuild-6.12.95+deb12",
    image: "linux-image-6.12.95+deb12-amd64-unsigned",
  });
  t.same(namesFromHeadersDepends(depends, "cloud-amd64"), {
    common: "linux-headers-6.12.95+deb12-common",
    kbuild: "linux-kbuild-6.12.95+deb12",
  });
  t.equal(dependsField("Package: x\nVersion: 1\n"), "");
});

t.test("headers that do not name their image: the image of the same ABI", async (t) => {
  // bookworm's linux-headers-6.1.0-57-amd64 (6.1.192-3) depends on no image
  t.same(imagesOfHeaders("linux-headers-6.1.0-57-amd64"), [
    "linux-image-6.1.0-57-amd64-unsigned",
    "linux-image-6.1.0-57-amd64",
  ]);
});

t.test("the key is every .deb's name and sha256", async (t) => {
  const uri = (name: string, sha: string) => ({
    url: `http://x/${name}`,
    filename: `${name}_1_amd64.deb`,
    size: 1,
    sha256: sha,
  });
  const pkgs: PrebuiltPackages = {
    debianVersion: "1",
    source: uri("linux-source", "a".repeat(64)),
    image: uri("linux-image", "b".repeat(64)),
    headers: uri("linux-headers", "c".repeat(64)),
    common: uri("linux-headers-common", "d".repeat(64)),
    kbuild: uri("linux-kbuild", "e".repeat(64)),
  };
  const key = prebuiltKey("r1", pkgs);
  t.match(key, /^[0-9a-f]{64}$/);
  t.equal(prebuiltKey("r1", { ...pkgs }), key, "the same packages, the same key");
  for (const field of ["source", "image", "headers", "common", "kbuild"] as const)
    t.not(
      prebuiltKey("r1", { ...pkgs, [field]: { ...pkgs[field], sha256: "f".repeat(64) } }),
      key,
      `${field}'s sha256`,
    );
  t.not(prebuiltKey("r2", pkgs), key, "the recipe");
});

t.test(
  "Debian 6.12's config leaves out erdma, siw, RTRS and RNBD: all four are built out of tree",
  async (t) => {
    t.same(
      driversToBuild(DEBIAN_6_12_CONFIG).map((d) => d.dir),
      [
        "drivers/infiniband/hw/erdma",
        "drivers/infiniband/sw/siw",
        "drivers/infiniband/ulp/rtrs",
        "drivers/block/rnbd",
      ],
    );
    const all = new Map(
      OUT_OF_TREE_DRIVERS.flatMap((d) => d.options.map((o) => [o, "m"] as [string, string])),
    );
    t.same(driversToBuild(all), [], "an image that has them builds none");
    const tree = { srcDir: "/h/common", buildDir: "/h/amd64" };
    const drivers = driversToBuild(DEBIAN_6_12_CONFIG);
    const args = outOfTreeMakeArgs(tree, "/w", drivers);
    t.same(args.slice(0, 4), ["-C", "/h/common", "O=/h/amd64", "M=/w"]);
    t.ok(args.includes("CONFIG_INFINIBAND_ERDMA=m") && args.includes("CONFIG_BLK_DEV_RNBD_SERVER=m"));
    t.ok(args.includes("KCFLAGS=-I/w/drivers/infiniband/ulp/rtrs"), "rnbd finds rtrs's headers");
    t.equal(args.at(-1), "modules");
    t.equal(
      outOfTreeKbuild(drivers.slice(0, 2)),
      "obj-m += drivers/infiniband/hw/erdma/\nobj-m += drivers/infiniband/sw/siw/\n",
    );
  },
);

t.test("the guest's modules are the wanted ones and what they depend on", async (t) => {
  t.equal(moduleNameOfFile("kernel/drivers/nvme/host/nvme-rdma.ko.xz"), "nvme_rdma");
  t.equal(moduleNameOfFile("erdma.ko"), "erdma");
  const deps: Record<string, string[]> = {
    rdma_ucm: ["ib_uverbs", "rdma_cm"],
    rdma_cm: ["iw_cm", "ib_core", "configfs"],
    ib_uverbs: ["ib_core"],
    iw_cm: ["ib_core"],
    nvme_rdma: ["nvme-core", "rdma_cm"],
  };
  const known = new Set([
    "rdma_ucm",
    "rdma_cm",
    "ib_uverbs",
    "iw_cm",
    "ib_core",
    "configfs",
    "nvme_rdma",
    "nvme_core",
  ]);
  const asked: string[] = [];
  const r = await moduleClosure(["rdma_ucm", "nvme-rdma", "virtio_pci"], known, async (n) => {
    asked.push(n);
    return deps[n] ?? [];
  });
  t.same(r.modules, [
    "configfs",
    "ib_core",
    "ib_uverbs",
    "iw_cm",
    "nvme_core",
    "nvme_rdma",
    "rdma_cm",
    "rdma_ucm",
  ]);
  t.same(r.missing, ["virtio_pci"], "a module the tree lacks (built in, or absent) is told");
  t.equal(new Set(asked).size, asked.length, "each module's dependencies are read once");
  for (const m of ["virtio_net", "erdma", "siw", "rdma_rxe", "nvme-rdma", "nvmet-rdma", "rnbd-client"])
    t.ok(GUEST_MODULES.includes(m), `the guest gets ${m}`);
});

t.test("the init's modules are given with the virtio transport and virtio_net first", async (t) => {
  const init = readFileSync(new URL("../../guest/initramfs/init", import.meta.url), "utf8");
  const initDefault = /^modules="([^"]*)"$/m.exec(init)?.[1]?.split(" ");
  t.same(INIT_MODULES, [
    "virtio_pci",
    "virtio_net",
    ...(initDefault ?? ["(no default set found in guest/initramfs/init)"]),
  ]);
});

t.test("config fragments are checked against Debian's config", async (t) => {
  const drivers = driversToBuild(DEBIAN_6_12_CONFIG);
  t.same(
    unmetRequests([fragment("rxe")], DEBIAN_6_12_CONFIG, drivers),
    [],
    "rxe: rdma_rxe and udp_tunnel are modules",
  );
  t.same(
    unmetRequests([fragment("ulp")], DEBIAN_6_12_CONFIG, drivers),
    [],
    "ulp: a module meets =y (configfs), RTRS and RNBD come out of tree",
  );
  t.same(
    unmetRequests([fragment("smp")], DEBIAN_6_12_CONFIG, drivers),
    [],
    "smp: NR_CPUS 8192 is at least 8",
  );
  t.same(
    unmetRequests([fragment("debug")], DEBIAN_6_12_CONFIG, drivers)
      .map((r) => r.name)
      .sort(),
    ["DEBUG_ATOMIC_SLEEP", "KASAN", "KASAN_GENERIC", "KASAN_OUTLINE", "KASAN_VMALLOC", "PROVE_LOCKING"],
    "debug: KASAN and lockdep are not Debian's (DEBUG_LIST and KFENCE are)",
  );
  t.same(
    unmetRequests([fragment("ulp")], DEBIAN_6_12_CONFIG, []).map((r) => r.name),
    ["INFINIBAND_RTRS_CLIENT", "INFINIBAND_RTRS_SERVER", "BLK_DEV_RNBD_CLIENT", "BLK_DEV_RNBD_SERVER"],
    "without the out-of-tree drivers RTRS and RNBD are unmet",
  );
  const notSet = {
    ...fragment("rxe"),
    requests: [{ name: "KFENCE", value: "n", file: "f.config", line: 3 }],
  };
  t.same(
    unmetRequests([notSet], DEBIAN_6_12_CONFIG, drivers).map((r) => r.name),
    ["KFENCE"],
    "=n is met only by an unset option",
  );
  try {
    checkFragmentsMet(
      "debian-image:6.12",
      "config-6.12.95+deb12-amd64",
      [fragment("debug")],
      DEBIAN_6_12_CONFIG,
      drivers,
      "debian:6.12",
    );
    t.fail("debug accepted");
  } catch (err) {
    t.ok(err instanceof HilError);
    const e = err as HilError;
    t.match(e.message, /debian-image:6\.12 cannot give 6 option\(s\).*CONFIG_KASAN/);
    t.match(e.detail, /CONFIG_KASAN=y \(debug:\d+\): not set in Debian's config-6\.12\.95\+deb12-amd64/);
    t.match(e.detail, "--kernel debian:6.12");
  }
});

t.test("boot arguments stand in for what base.config sets", async (t) => {
  t.equal(baseConfigValue(BASE_CONFIG_PATH, "DEFAULT_HUNG_TASK_TIMEOUT"), "10");
  t.equal(baseConfigValue(BASE_CONFIG_PATH, "NO_SUCH_OPTION"), undefined);
  t.notOk(asksForSmp([fragment("rxe")]));
  t.ok(asksForSmp([fragment("smp")]));
  const up = prebuiltBootArgs({ userFragments: [fragment("rxe")], hungTaskTimeoutSecs: "10" });
  t.same(up, [
    "nosmp",
    "sysctl.kernel.hung_task_timeout_secs=10",
    "iomem=relaxed",
    "hil.modules=virtio_pci,virtio_net,ib_core,ib_uverbs,rdma_ucm,erdma",
  ]);
  t.notOk(
    prebuiltBootArgs({ userFragments: [fragment("smp")], hungTaskTimeoutSecs: "10" }).includes("nosmp"),
    "--config smp keeps the CPUs",
  );
});

t.test("hil's own kernels are SMP builds booted on one CPU unless a fragment asks for SMP", async (t) => {
  t.ok(asksForSmp([readFragment(BASE_CONFIG_PATH, "base.config")]), "base.config builds SMP");
  t.same(smpBootArgs([]), ["nosmp"]);
  t.same(smpBootArgs([fragment("ulp"), fragment("rxe")]), ["nosmp"]);
  t.same(smpBootArgs([fragment("rxe"), fragment("smp")]), []);
});

t.test(
  "the probe does not take the Debian kernel's lines that name erdma for erdma's complaints",
  async (t) => {
    // a debian-image:6.12 guest's dmesg (hil boot --kernel debian-image:6.12 -- dmesg)
    const dmesg = [
      "[    0.000000] Command line: console=ttyS0,115200 panic=-1 no_timer_check hil.modules=virtio_net,ib_core,ib_uverbs,rdma_ucm,erdma",
      "[    0.000000] Kernel command line: console=ttyS0,115200 panic=-1 no_timer_check hil.modules=virtio_net,ib_core,ib_uverbs,rdma_ucm,erdma",
      "[    5.435037] erdma: loading out-of-tree module taints kernel.",
      "[    5.435324] erdma: module verification failed: signature and/or required key missing - tainting kernel",
    ].join("\n");
    t.same(dmesgProblems(dmesg), []);
    const complaint = "[    6.0] erdma 0000:00:03.0: wait init done failed.";
    t.same(dmesgProblems(`${dmesg}\n${complaint}`), [complaint.trim()], "erdma's own complaint still counts");
  },
);

t.test("a matrix plan may name debian-image:6.12; an unknown image is its own error", async (t) => {
  const plan = (kernel: string) =>
    parsePlan(
      [
        `name: p`,
        `kernels: [${kernel}]`,
        "drivers: [erdma]",
        "executors: [kernel]",
        "scenarios: [drain-qp-idle]",
      ].join("\n"),
      "/plans/p.yaml",
    );
  const ok = await plan("debian-image:6.12");
  t.equal(ok.jobs[0]?.spec.kernel, "debian-image:6.12");
  t.match(ok.jobs[0]?.id, /^debian-image-6\.12\./, "the job id names the image, not a path's basename");
  await t.rejects(plan("debian-image:5.10"), /unknown Debian kernel image debian-image:5\.10/);
});

t.test("a module's vermagic release is read from its .modinfo", async (t) => {
  const dir = t.testdir({
    "m.ko": Buffer.concat([
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0]),
      Buffer.from(
        "license=GPL\0vermagic=6.12.95+deb12-amd64 SMP preempt mod_unload modversions \0name=erdma\0",
      ),
    ]),
    "none.ko": "no modinfo here",
  });
  t.equal(await vermagicRelease(join(dir, "m.ko")), "6.12.95+deb12-amd64");
  t.equal(await vermagicRelease(join(dir, "none.ko")), undefined);
});

t.test(
  "a value option is met by the same value (NR_CPUS by at least as many), and told with Debian's",
  async (t) => {
    const frag = (name: string, value: string) => ({
      ...fragment("smp"),
      label: "mine.config",
      requests: [{ name, value, file: "mine.config", line: 1 }],
    });
    const drivers = driversToBuild(DEBIAN_6_12_CONFIG);
    const check = (name: string, value: string) => () =>
      Promise.resolve(
        checkFragmentsMet(
          "debian-image:6.12",
          "config-x",
          [frag(name, value)],
          DEBIAN_6_12_CONFIG,
          drivers,
          "debian:6.12",
        ),
      );
    t.same(unmetRequests([frag("NR_CPUS", "8192")], DEBIAN_6_12_CONFIG, drivers), []);
    t.same(unmetRequests([frag("DEFAULT_HUNG_TASK_TIMEOUT", "120")], DEBIAN_6_12_CONFIG, drivers), []);
    const cpus = await hilErrorOf(check("NR_CPUS", "9999"), "NR_CPUS=9999 accepted");
    t.match(cpus.detail, /CONFIG_NR_CPUS=9999 \(mine\.config:1\): =8192 in Debian's config-x/);
    const hung = await hilErrorOf(check("DEFAULT_HUNG_TASK_TIMEOUT", "10"), "a 10 s default accepted");
    t.match(
      hung.detail,
      /=120 in Debian's config-x/,
      "base.config's 10 s is set at boot, not met by a fragment",
    );
  },
);
