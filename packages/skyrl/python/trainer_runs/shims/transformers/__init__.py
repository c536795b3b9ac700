"""Shim of transformers: names the renderers use in annotations; tokenizers come from tokenizer_shim."""

from typing import Any


class PreTrainedTokenizer:  # annotations only
    pass


PreTrainedTokenizerFast = PreTrainedTokenizer


def __getattr__(name: str) -> Any:
    return type(name, (), {})
