"""`checked_offset` gives the offset pygls's `offset_at_position` gives, for every valid
position in every encoding a client may negotiate (it splits the document once where
pygls splits it three times)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from server.lsp.language_server import checked_offset

TEXTS = st.lists(st.sampled_from(["a", "é", "😀", "\t", "\n", "\r\n", "def f():", " "]))
ENCODINGS = st.sampled_from(list(types.PositionEncodingKind))


@settings(max_examples=300, deadline=None)
@given(pieces=TEXTS, encoding=ENCODINGS, where=st.floats(0, 1), column=st.floats(0, 1))
def test_offsets_are_pyglss(
    pieces: list[str], encoding: types.PositionEncodingKind, where: float, column: float
) -> None:
    document = TextDocument("file:///a.py", "".join(pieces), position_codec=PositionCodec(encoding))
    lines = document.lines
    line = int(where * len(lines))  # len(lines): the position after a final newline
    width = (
        document.position_codec.client_num_units(lines[line].rstrip("\r\n"))
        if line < len(lines)
        else 0
    )
    position = types.Position(line=line, character=int(column * width))
    assert checked_offset(document, position) == document.offset_at_position(position)
