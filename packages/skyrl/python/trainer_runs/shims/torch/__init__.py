"""Shim of torch (not needed to render text: the renderers use it for loss weights only). Tensors are lists."""

from typing import Any

int = "int"  # noqa: A001
float32 = "float32"
long = "long"


class Tensor(list):
    pass


def tensor(data: Any, dtype: Any = None) -> Tensor:
    return Tensor(data)


def zeros(n: Any, dtype: Any = None) -> Tensor:
    return Tensor([0] * (n if isinstance(n, type(1)) else n[0]))


def full(shape: Any, value: Any, dtype: Any = None) -> Tensor:
    return Tensor([value] * (shape if isinstance(shape, type(1)) else shape[0]))


def cat(parts: Any, dim: Any = 0) -> Tensor:
    out = Tensor()
    for p in parts:
        out.extend(p)
    return out
