"""Shim of `chz` (not installable here): @chz.chz makes a frozen keyword dataclass, chz.field a dataclass field."""

import dataclasses
from typing import Any


def chz(cls=None, **_kw: Any):
    def wrap(c):
        return dataclasses.dataclass(frozen=True, kw_only=True)(c)

    return wrap(cls) if cls is not None else wrap


def field(default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING, **_kw: Any):
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory)
    return dataclasses.field(default=default)


def replace(obj: Any, **kw: Any) -> Any:
    return dataclasses.replace(obj, **kw)
