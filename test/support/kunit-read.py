"""KTAP read by the kernel's own reader: tools/testing/kunit/kunit_parser.py of an unpacked source.

Usage: python3 kunit-read.py <kernel-source>/tools/testing/kunit < ktap.txt
Prints the parsed tree as JSON: name, status (kunit_parser's TestStatus name), the errors the
parser reported and, for a parent, its counts and subtests. kunit_parser prints its own progress
on the stdout it sees when imported: it is sent to stderr here.
"""

import json
import sys

kunit_dir = sys.argv[1]
out = sys.stdout
sys.stdout = sys.stderr
sys.path.insert(0, kunit_dir)
import kunit_parser  # noqa: E402  (found through sys.path, from the kernel source)


def tree(test):
    node = {"name": test.name, "status": test.status.name, "errors": test.counts.errors}
    if test.subtests:
        c = test.counts
        node["counts"] = {"passed": c.passed, "failed": c.failed, "crashed": c.crashed, "skipped": c.skipped}
        node["subtests"] = [tree(t) for t in test.subtests]
    return node


result = kunit_parser.parse_run_tests(sys.stdin.read().splitlines())
json.dump(tree(result), out)
out.write("\n")
