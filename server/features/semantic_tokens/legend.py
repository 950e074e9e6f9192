"""The semantic-token legend: the kinds and modifiers we tell apart, and the legend each
client is sent.

`Legend.for_client` picks the legend from what the client says it supports: a kind the
client lacks falls back to a near one (method → function, property → variable), or is
left out; the custom modifier is always announced (clients ignore what they do not know).
The LSP layer picks one per client at `initialize`; `encoding` maps tokens through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from server.features.semantic_tokens.model import CROSS_FILE

TOKEN_TYPES: Final = (
    "namespace",
    "type",
    "class",
    "function",
    "method",
    "parameter",
    "variable",
    "property",
)
"""The kinds of names this module tells apart, in the order of the full legend."""
TOKEN_MODIFIERS: Final = ("declaration", "readonly", "async", "defaultLibrary", CROSS_FILE)
FALLBACKS: Final[Mapping[str, tuple[str, ...]]] = {
    "namespace": ("namespace",),
    "type": ("type", "class"),
    "class": ("class", "type"),
    "function": ("function", "method"),
    "method": ("method", "function"),
    "parameter": ("parameter", "variable"),
    "variable": ("variable",),
    "property": ("property", "variable"),
}
"""For a kind the client does not support, the kinds to use instead, in order."""


@dataclass(frozen=True, slots=True)
class Legend:
    """The announced legend, and how this module's kinds and modifiers map onto it."""

    token_types: tuple[str, ...]
    token_modifiers: tuple[str, ...]
    type_index: Mapping[str, int]
    """Our kind -> its index in `token_types` (after fallbacks); absent: not sent."""
    modifier_bits: Mapping[str, int]

    @classmethod
    def for_client(
        cls, client_types: Sequence[str] | None, client_modifiers: Sequence[str] | None
    ) -> Legend:
        """The legend for a client that lists these (None: it did not say; all of ours)."""
        wanted = set(client_types) if client_types is not None else set(TOKEN_TYPES)
        chosen: dict[str, str] = {}
        for kind in TOKEN_TYPES:
            found = next((k for k in FALLBACKS[kind] if k in wanted), None)
            if found is not None:
                chosen[kind] = found
        announced = tuple(dict.fromkeys(k for k in TOKEN_TYPES if k in chosen.values()))
        index = {kind: announced.index(target) for kind, target in chosen.items()}
        known = set(client_modifiers) if client_modifiers is not None else set(TOKEN_MODIFIERS)
        modifiers = tuple(m for m in TOKEN_MODIFIERS if m in known or m == CROSS_FILE)
        bits: dict[str, int] = {m: 1 << i for i, m in enumerate(modifiers)}
        return cls(announced, modifiers, index, bits)


FULL_LEGEND: Final = Legend.for_client(None, None)
