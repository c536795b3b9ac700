"""Shared helpers: the live servers vitest started (packages/skyrl/src/shim.test.ts) and recorded-shape checks."""

import json
import os
import unittest
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
ENDPOINT = os.environ.get("BENCHMAX_TEST_ENDPOINT")
TOKEN = os.environ.get("BENCHMAX_TEST_TOKEN")
CUSTOM = os.environ.get("BENCHMAX_TEST_CUSTOM_ENDPOINT")
RECORD = os.environ.get("BENCHMAX_RECORD_FIXTURES") == "1"
PROMPT = [{"role": "system", "content": "You add numbers."}, {"role": "user", "content": "What is 10 + 7?"}]

needs_server = unittest.skipIf(not ENDPOINT, "BENCHMAX_TEST_ENDPOINT not set (run through vitest: src/shim.test.ts)")


def call(name: str, **args: Any) -> str:
    return '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (name, json.dumps(args))


def _type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def shape_problems(expected: Any, actual: Any, where: str = "$") -> list:
    """Where `actual` lacks a key of `expected` or has another JSON type (extra keys are allowed)."""
    out = []
    if _type(expected) != _type(actual):
        return ["%s: expected %s, got %s" % (where, _type(expected), _type(actual))]
    if isinstance(expected, dict):
        for k, v in expected.items():
            if k not in actual:
                out.append("%s.%s: missing" % (where, k))
            else:
                out += shape_problems(v, actual[k], "%s.%s" % (where, k))
    elif isinstance(expected, list) and expected and actual:
        out += shape_problems(expected[0], actual[0], where + "[0]")
    return out


def check_fixture(case: unittest.TestCase, name: str, actual: Any) -> None:
    """Compare a live request/response with its recorded fixture (BENCHMAX_RECORD_FIXTURES=1 re-records it)."""
    path = os.path.join(FIXTURES, name + ".json")
    if RECORD:
        with open(path, "w") as f:
            json.dump(actual, f, indent=2, sort_keys=True)
            f.write("\n")
        return
    with open(path) as f:
        expected = json.load(f)
    problems = shape_problems(expected, actual)
    case.assertEqual(problems, [], "%s differs from fixtures/%s.json" % (name, name))
