"""Build the Python packages of this folder as wheels (PEP 427), with the standard library only.

    python3 build_wheel.py [--out DIR] [--package benchmax_client|benchmax_skyrl ...]

`benchmax-client` (benchmax_client/: BenchmaxEnv, the HTTP transport, the TRL and verifiers adapters) needs nothing
beyond the standard library; `benchmax-skyrl` (benchmax_skyrl/: the SkyRL shim and the tinker-cookbook adapter)
requires it. Pure-Python wheels (py3-none-any), reproducible: fixed file order and timestamps.
Install offline: `pip install --no-index DIR/benchmax_client-<version>-py3-none-any.whl`.
"""

import argparse
import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = {
    "benchmax_client": {
        "name": "benchmax-client",
        "summary": "Client for benchmax RL environment servers: episodes, tools, rewards; TRL and verifiers adapters",
        "requires": [],
    },
    "benchmax_skyrl": {
        "name": "benchmax-skyrl",
        "summary": "benchmax envs in SkyRL (BaseTextEnv) and the tinker cookbook (EnvGroupBuilder)",
        "requires": ["benchmax-client"],
    },
}
EPOCH = (1980, 1, 1, 0, 0, 0)


def version_of(pkg: str) -> str:
    with open(os.path.join(HERE, pkg, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        raise SystemExit("%s/__init__.py has no __version__" % pkg)
    return m.group(1)


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def build(pkg: str, out: str) -> str:
    spec = PACKAGES[pkg]
    version = version_of(pkg)
    dist = spec["name"].replace("-", "_")
    info = "%s-%s.dist-info" % (dist, version)
    files = []
    for root, dirs, names in os.walk(os.path.join(HERE, pkg)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":
                path = os.path.join(root, n)
                files.append((os.path.relpath(path, HERE).replace(os.sep, "/"), open(path, "rb").read()))
    requires = [r + "==" + version_of(r.replace("-", "_")) for r in spec["requires"]]
    metadata = "\n".join(
        ["Metadata-Version: 2.1", "Name: " + spec["name"], "Version: " + version, "Summary: " + spec["summary"],
         "License: Apache-2.0", "Requires-Python: >=3.9"]
        + ["Requires-Dist: " + r for r in requires]
    ) + "\n"
    wheel = "Wheel-Version: 1.0\nGenerator: benchmax build_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files.append((info + "/METADATA", metadata.encode()))
    files.append((info + "/WHEEL", wheel.encode()))
    record = "".join("%s,%s,%d\n" % (p, digest(d), len(d)) for p, d in files) + info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode()))
    os.makedirs(out, exist_ok=True)
    target = os.path.join(out, "%s-%s-py3-none-any.whl" % (dist, version))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files:
            zi = zipfile.ZipInfo(p, EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "dist", "python"))
    ap.add_argument("--package", action="append", choices=sorted(PACKAGES))
    a = ap.parse_args()
    for pkg in a.package or sorted(PACKAGES):
        print(build(pkg, os.path.abspath(a.out)))


if __name__ == "__main__":
    main()
