"""tinker.types shim: ModelInput is a list of chunks; EncodedTextChunk holds token ids."""

from dataclasses import dataclass, field
from typing import Any, List, Literal, Union

StopReason = Literal["length", "stop"]


@dataclass(frozen=True)
class EncodedTextChunk:
    tokens: List[int]
    type: str = "encoded_text"

    @property
    def length(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class ImageChunk:
    data: bytes = b""
    format: str = "png"
    expected_tokens: int = 0
    type: str = "image"

    @property
    def length(self) -> int:
        return self.expected_tokens


ModelInputChunk = Union[EncodedTextChunk, ImageChunk]


@dataclass(frozen=True)
class ModelInput:
    chunks: List[Any] = field(default_factory=list)

    @classmethod
    def from_ints(cls, tokens: List[int]) -> "ModelInput":
        return cls([EncodedTextChunk(list(tokens))])

    @classmethod
    def empty(cls) -> "ModelInput":
        return cls([])

    def to_ints(self) -> List[int]:
        out: List[int] = []
        for c in self.chunks:
            if not isinstance(c, EncodedTextChunk):
                raise ValueError("tinker shim: to_ints on a non-text chunk")
            out.extend(c.tokens)
        return out

    @property
    def length(self) -> int:
        return sum(c.length for c in self.chunks)

    def append(self, chunk: Any) -> "ModelInput":
        return ModelInput(list(self.chunks) + [chunk])

    def append_int(self, token: int) -> "ModelInput":
        return self.append(EncodedTextChunk([token]))


@dataclass
class SamplingParams:
    max_tokens: Any = None
    temperature: float = 1.0
    stop: Any = None
    seed: Any = None


def __getattr__(name: str) -> Any:
    return type(name, (), {})
