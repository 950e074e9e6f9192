"""The server's documents split lines, convert positions and apply edits as LSP defines them,
checked against an independent model (tests/lsp_text_model.py) over text made of every
character `str.splitlines` takes for a line break; and over LSP, the issue's own case."""

from __future__ import annotations

from pathlib import Path

from fake_openai import FakeBackend
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_helpers import open_document, partial_change, suggestion
from lsp_text_model import LINE_BREAKS, NOT_LINE_BREAKS, ModelText
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.features.semantic_tokens.encoding import Columns
from server.lsp.documents import LspPositionCodec, LspTextDocument, lsp_lines, offset_in

PIECES = st.sampled_from(["a", "b", " ", "é", "😀", "\t", *LINE_BREAKS, *NOT_LINE_BREAKS])
TEXT = st.lists(PIECES, max_size=30).map("".join)
ENCODINGS = {"utf-8": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}
ENCODING = st.sampled_from(sorted(ENCODINGS))
POSITION = st.tuples(st.integers(0, 12), st.integers(0, 40))


def document(text: str, encoding: str) -> LspTextDocument:
    return LspTextDocument(
        "file:///a.py", text, version=1, position_codec=LspPositionCodec(ENCODINGS[encoding])
    )


def test_lines_end_only_at_lf_crlf_and_cr() -> None:
    assert lsp_lines("a\x0cb\u2028c\r\nd\re\nf") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]
    assert lsp_lines("") == [] and lsp_lines("x\n") == ["x\n"]


@settings(max_examples=400, deadline=None)
@given(text=TEXT, encoding=ENCODING, at=POSITION)
def test_positions_convert_to_the_models_offsets_and_back(
    text: str, encoding: str, at: tuple[int, int]
) -> None:
    doc, model = document(text, encoding), ModelText(text, encoding)
    lines = doc.lines
    offset = offset_in(lines, doc.position_codec.position_from_client_units(lines, pos(*at)))
    assert offset == model.offset(*at)
    if text[offset - 1 : offset + 1] != "\r\n":  # inside a line ending: no position
        back = doc.client_position_at_offset(offset)
        assert (back.line, back.character) == model.position(offset)


@settings(max_examples=400, deadline=None)
@given(
    text=TEXT,
    encoding=ENCODING,
    edits=st.lists(st.tuples(POSITION, POSITION, TEXT), max_size=8),
)
def test_incremental_edits_give_the_models_text(
    text: str, encoding: str, edits: list[tuple[tuple[int, int], tuple[int, int], str]]
) -> None:
    doc, model = document(text, encoding), ModelText(text, encoding)
    for start, end, new in edits:
        doc.apply_change(
            types.TextDocumentContentChangePartial(
                range=types.Range(start=pos(*start), end=pos(*end)), text=new
            )
        )
        model.edit(start, end, new)
        assert doc.source == model.text


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


async def test_an_edit_below_a_form_feed_lands_where_the_editor_put_it(
    vscode: LanguageClient, fake: FakeBackend, workspace: Path
) -> None:
    """The issue's case: line 4 of the editor was line 5 of the server (pygls split at the
    form feed), so the edit hit `return os` and a completion after it failed."""
    fake.script([{"text": "2\n"}])
    for odd in ("\x0c", "X = 'a\u2028b'"):
        text = f"import os\n{odd}\ndef f():\n    return os\nVALUE = 1\n"
        uri = open_document(vscode, workspace / f"odd_{len(odd)}.py", text)
        vscode.text_document_did_change(partial_change(uri, 2, pos(4, 8), pos(4, 9), "7"))
        assert await suggestion(vscode, uri, pos(4, 9)) == "2"
        expected = f"import os\n{odd}\ndef f():\n    return os\nVALUE = 7"
        assert expected in fake.events()[-1]["prompt"]


@settings(max_examples=400, deadline=None)
@given(text=TEXT, encoding=ENCODING, where=st.floats(0, 1))
def test_tree_sitter_points_convert_to_the_models_positions(
    text: str, encoding: str, where: float
) -> None:
    """Semantic tokens come from tree-sitter, whose rows end at `\\n` only."""
    offset = int(where * len(text))
    if text[offset - 1 : offset + 1] == "\r\n":
        return  # inside a line ending: no position
    row = text[:offset].count("\n")
    byte_column = len(text[text.rfind("\n", 0, offset) + 1 : offset].encode("utf-8"))
    position = Columns(text, encoding).position(row, byte_column)
    assert position == ModelText(text, encoding).position(offset)
