"""A minimal stand-in for a Hugging Face tokenizer (transformers / tokenizers are not in Debian, and no model files
can be downloaded here). Written by us.

Byte-level: ids 0-255 are UTF-8 bytes; every special token of the chat formats the cookbook renders (`<|...|>`, Qwen's
`<think>` `<tool_call>` `<tool_response>` and their closing tags,
DeepSeek's `<｜...｜>`) is one id from 1000 up, assigned on first sight. So a renderer's special tokens stay single
tokens (stop sequences, `convert_tokens_to_ids`) and decode(encode(text)) == text.
"""

import re
from typing import Dict, List, Union

SPECIAL = re.compile(r"</?(?:think|tool_call|tool_response)>|<\|[A-Za-z0-9_./:-]{1,64}\|>|<｜[^｜<>]{1,64}｜>|\[BOS\]|\[EOS\]")


class ByteSpecialTokenizer:
    bos_token = "<|begin_of_text|>"
    eos_token = "<|end_of_text|>"
    name_or_path = "benchmax/byte-special-tokenizer"

    def __init__(self) -> None:
        self._ids: Dict[str, int] = {}
        self._tokens: Dict[int, str] = {}

    def _special(self, tok: str) -> int:
        if tok not in self._ids:
            i = 1000 + len(self._ids)
            self._ids[tok] = i
            self._tokens[i] = tok
        return self._ids[tok]

    def encode(self, text: str, add_special_tokens: bool = False, **_kw) -> List[int]:
        out: List[int] = []
        pos = 0
        for m in SPECIAL.finditer(text):
            out.extend(text[pos : m.start()].encode("utf-8"))
            out.append(self._special(m.group(0)))
            pos = m.end()
        out.extend(text[pos:].encode("utf-8"))
        return out

    def decode(self, ids: Union[List[int], int], skip_special_tokens: bool = False, **_kw) -> str:
        if isinstance(ids, int):
            ids = [ids]
        parts: List[str] = []
        buf = bytearray()
        for i in ids:
            if i < 256:
                buf.append(i)
                continue
            parts.append(buf.decode("utf-8", "replace"))
            buf = bytearray()
            if not skip_special_tokens:
                parts.append(self._tokens.get(i, ""))
        parts.append(buf.decode("utf-8", "replace"))
        return "".join(parts)

    def convert_tokens_to_ids(self, token: Union[str, List[str]]):
        if isinstance(token, list):
            return [self.convert_tokens_to_ids(t) for t in token]
        return self._special(token) if SPECIAL.fullmatch(token) else self.encode(token)[0]

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, list):
            return [self.convert_ids_to_tokens(i) for i in ids]
        return self._tokens.get(ids) or bytes([ids]).decode("latin-1")

    @property
    def bos_token_id(self) -> int:
        return self._special(self.bos_token)

    @property
    def eos_token_id(self) -> int:
        return self._special(self.eos_token)

    def __len__(self) -> int:
        return 256 + len(self._ids)
