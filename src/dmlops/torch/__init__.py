"""dmlops in torch programs, imported only with torch.

In data-flow order: `decompositions` turns a validated descriptor's logical copies into
recipes of torch views and copies (what torch.compile traces); `opaque` holds the indexed
operators, TILE and PADDING1 as custom operators with fake implementations; `moves` gives
those operators gradients (the operator run on the inputs' positions); `block` compiles a
function of `Graph` nodes, forward and backward, into one plan each (`Block`); `chains`
replays an eager chain of calls as one `Block`; `operators` registers every functional
operator as a `torch.library` custom operator and routes the functional calls' torch
tensors (the module the package imports when torch is imported).

The modules' old names (`dmlops.torch_ops`, `dmlops.torch_block`, ...) still import them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Block"]


def __getattr__(name: str) -> Any:
    """`Block`, imported when asked for (it imports torch)."""
    if name == "Block":
        from .block import Block

        return Block
    raise AttributeError(f"module 'dmlops.torch' has no attribute {name!r}")
