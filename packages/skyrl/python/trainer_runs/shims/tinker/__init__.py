"""Shim of the `tinker` client's data types (not installable here: no PyPI). Only what the cookbook's renderers and
rollout loop touch: ModelInput and its chunks, StopReason, and names used in annotations. Written by us."""

from dataclasses import dataclass, field
from typing import Any, List, Literal, Union

from . import types  # noqa: F401  (tinker.types.*)
from .types import EncodedTextChunk, ImageChunk, ModelInput, ModelInputChunk, SamplingParams, StopReason

__all__ = ["EncodedTextChunk", "ImageChunk", "ModelInput", "ModelInputChunk", "SamplingParams", "StopReason"]


class SamplingClient:  # annotations only
    pass


class TrainingClient:  # annotations only
    pass


class ServiceClient:  # annotations only
    pass


class Datum:  # annotations only
    def __init__(self, *a: Any, **k: Any):
        raise RuntimeError("tinker shim: Datum is not available")


class TensorData:  # annotations only
    pass


def __getattr__(name: str) -> Any:  # any other name used only in annotations
    return type(name, (), {})
