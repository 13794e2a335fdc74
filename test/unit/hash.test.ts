import t from "tap";
import { hashParts, shortKey } from "../../util/hash.ts";

t.test("hashParts separates parts unambiguously", async (t) => {
  t.not(hashParts(["ab", "c"]), hashParts(["a", "bc"]));
  t.equal(hashParts(["x"]), hashParts(["x"]));
  t.equal(shortKey(hashParts(["x"])).length, 16);
});
