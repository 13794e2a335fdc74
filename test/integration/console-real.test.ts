// The console fixtures are real and can be made again: each golden log of test/fixtures/console/
// captured on the default kernel (debian:6.12, no fragment) is captured again from a real guest and
// parsed the same (test/support/console-real-cases.ts). The logs of Linux 6.1 and of the debug
// kernel are captured again in the nightly tier (test/nightly/console-real-versions.test.ts).
import t from "tap";
import { captureAgain, onDefaultKernel } from "../support/console-real-cases.ts";

t.setTimeout(60 * 60 * 1000);

captureAgain(onDefaultKernel);
