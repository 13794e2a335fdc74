"""A KCIDB document checked the way kcidb-io validates one.

kcidb-io (kcidb_io/schema/abstract.py, _build_validator_for and validate_exactly) validates with
jsonschema.Draft7Validator(schema=V5_0.json, format_checker=Draft7Validator.FORMAT_CHECKER). The
kcidb-io package cannot be installed here (it is on PyPI only, which this machine does not
reach); its schema dictionary is vendored in harness/report/kcidb-schema/ (see SOURCE.md), so
this runs kcidb-io's validator on kcidb-io's schema with Debian's python3-jsonschema.

Usage: /usr/bin/python3 kcidb-check.py <schema.json> < document.json
Prints JSON: the errors ("<path>: <message>"), their count and the formats the checker knows.
"""

import json
import sys

import jsonschema

with open(sys.argv[1], encoding="utf-8") as f:
    schema = json.load(f)
doc = json.load(sys.stdin)
checker = jsonschema.Draft7Validator.FORMAT_CHECKER
validator = jsonschema.Draft7Validator(schema=schema, format_checker=checker)
errors = [
    f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}"
    for e in validator.iter_errors(doc)
]
json.dump({"errors": errors[:20], "count": len(errors), "formats": sorted(checker.checkers)}, sys.stdout)
sys.stdout.write("\n")
