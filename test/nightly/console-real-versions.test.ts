// The golden console logs (test/fixtures/console/) of the kernels other than the default one, Linux
// 6.1 and debian:6.12 with the debug fragment (KASAN, lockdep), captured again from a real guest
// and parsed the same (test/support/console-real-cases.ts).
import t from "tap";
import { captureAgain, onDefaultKernel } from "../support/console-real-cases.ts";

t.setTimeout(60 * 60 * 1000);

captureAgain((as) => !onDefaultKernel(as));
