"""Shared helpers: the live servers vitest started (packages/skyrl/src/shim.test.ts) and recorded-shape checks."""

import json
import os
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Tuple

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


class StubServer:
    """A local HTTP server answering each request with `answer(method, path, body)`: (status, JSON body) or
    (status, JSON body, extra headers). Records every request in `requests`: (method, path, headers, body)."""

    def __init__(self, answer: Callable[..., Tuple[Any, ...]]):
        outer = self
        self.requests: List[Tuple[str, str, Dict[str, str], Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else None
                outer.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, out, *extra = answer(self.command, self.path, body)
                data = json.dumps(out).encode()
                self.send_response(status)
                for k, v in (extra[0] if extra else {}).items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def paths(self) -> List[str]:
        return [r[1] for r in self.requests]

    @property
    def bodies(self) -> List[Any]:
        return [r[3] for r in self.requests]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
