"""setuptools' hook for what pyproject.toml leaves dynamic: the version.

It is set in one place for the npm package and this distribution: ../package.json (@benchmax/skyrl), which
changesets bump. An sdist has no package.json beside it: its PKG-INFO holds the version it was made with.
"""

import json
import os
import re

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def version() -> str:
    pkg = os.path.join(HERE, "..", "package.json")
    if os.path.exists(pkg):
        with open(pkg, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("name") == "@benchmax/skyrl" and isinstance(data.get("version"), str):
            return data["version"]
    info = os.path.join(HERE, "PKG-INFO")
    if os.path.exists(info):
        with open(info, encoding="utf-8") as f:
            m = re.search(r"^Version: (\S+)$", f.read(), re.M)
        if m:
            return m.group(1)
    raise SystemExit(
        "benchmax-client: no version: build from packages/skyrl/python (the version is read from "
        "packages/skyrl/package.json, @benchmax/skyrl) or from an sdist (PKG-INFO)"
    )


setup(version=version())
