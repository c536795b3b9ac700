"""The version of the benchmax-client distribution (benchmax_client and benchmax_skyrl).

It is set in one place, packages/skyrl/package.json (@benchmax/skyrl, bumped by changesets with the npm packages):
read from there in a checkout, an editable install or the npm package (python/ lies beside package.json), else from
the installed distribution's metadata (a wheel or an sdist install)."""

import json
import os


def _version() -> str:
    pkg = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "package.json")
    try:
        with open(pkg, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("name") == "@benchmax/skyrl" and isinstance(data.get("version"), str):
            return data["version"]
    except (OSError, ValueError):
        pass
    try:
        from importlib.metadata import version

        return version("benchmax-client")
    except Exception:  # a bare copy of the sources, neither beside package.json nor installed
        return "0+unknown"


__version__ = _version()
