"""JUnit XML read by junitparser (Debian's python3-junitparser), as a CI system's reader would.

Usage: /usr/bin/python3 junit-read.py < report.xml
Prints JSON: per testsuite its attributes as junitparser reads them, the same counts and time as
junitparser computes them from the testcases (update_statistics), its properties and <system-out>,
and per testcase its classname, name, time, outcome (passed, failure, error or skipped), the
outcome's message, type and text, and <system-out>; the root's attributes and computed counts. A file that is not well-formed
XML makes junitparser raise: the exit status is then 1.
"""

import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped
from junitparser.junitparser import SystemOut


def outcome(case):
    for r in case.result:
        kind = {Failure: "failure", Error: "error", Skipped: "skipped"}.get(type(r))
        if kind:
            return {"outcome": kind, "message": r.message, "type": r.type, "text": r.text}
    return {"outcome": "passed"}


def stats(elem):
    """The counts and time as written, then as junitparser computes them from the testcases."""
    keys = ("tests", "failures", "errors", "skipped", "time")
    written = {k: getattr(elem, k) for k in keys}
    elem.update_statistics()
    return written, {k: getattr(elem, k) for k in keys}


def read(source):
    xml = JUnitXml.fromfile(source)
    suites = []
    for suite in xml:
        cases = []
        for case in suite:
            cases.append(
                {
                    "classname": case.classname,
                    "name": case.name,
                    "time": case.time,
                    "system_out": case.system_out,
                    **outcome(case),
                }
            )
        written, computed = stats(suite)
        out = suite.child(SystemOut)
        suites.append(
            {
                "name": suite.name,
                "written": written,
                "computed": computed,
                "timestamp": suite.timestamp,
                "properties": {p.name: p.value for p in suite.properties()},
                "system_out": out.text if out is not None else None,
                "cases": cases,
            }
        )
    written, computed = stats(xml)
    return {"written": written, "computed": computed, "suites": suites}


json.dump(read(sys.stdin.buffer), sys.stdout)
sys.stdout.write("\n")
