"""Semantic tokens through the real server: what each name is, the legend the client
supports, ranges, and deltas that always add up to the full result."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from conftest import CONFIG, editor_capabilities, fast_settings
from fake_openai import FakeBackend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import open_document, partial_change
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient
from shop_helpers import CHECKOUT, SHOP, copy_shop, wait_for_index

from server.features.semantic_tokens.encoding import apply_delta


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return copy_shop(tmp_path)


def legend_of(client: LanguageClient) -> types.SemanticTokensLegend:
    """The legend the server announced (its capabilities, as the client registered them)."""
    legend = client.semantic_legend  # type: ignore[attr-defined]
    assert isinstance(legend, types.SemanticTokensLegend)
    return legend


async def started(client: LanguageClient, editor: str, shop: Path, fake: FakeBackend) -> None:
    """initialize as `editor`, keeping the announced legend on the client."""
    capabilities = editor_capabilities(editor)
    await start_with(client, capabilities, shop, fake)


async def start_with(
    client: LanguageClient, capabilities: types.ClientCapabilities, shop: Path, fake: FakeBackend
) -> None:
    registrations: list[types.Registration] = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    uri = shop.as_uri()
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=shop.name)],
            initialization_options=fast_settings(fake.url),
        )
    )
    provider = result.capabilities.semantic_tokens_provider
    assert isinstance(provider, types.SemanticTokensOptions)
    client.semantic_legend = provider.legend  # type: ignore[attr-defined]
    client.semantic_provider = provider  # type: ignore[attr-defined]
    await wait_for_index(client)


@pytest_lsp.fixture(config=CONFIG, params=["vscode", "neovim"])
async def tokens_client(
    request: pytest.FixtureRequest, lsp_client: LanguageClient, fake: FakeBackend, shop: Path
) -> AsyncIterator[None]:
    await started(lsp_client, request.param, shop, fake)
    yield
    await lsp_client.shutdown_session()


def decode(data: Sequence[int], legend: types.SemanticTokensLegend, text: str) -> list[str]:
    """Tokens as `line:column text kind [modifiers]`, for golden comparisons."""
    lines = text.split("\n")
    out = []
    line = column = 0
    for index in range(0, len(data), 5):
        delta_line, delta_start, length, kind, bits = data[index : index + 5]
        line += delta_line
        column = column + delta_start if delta_line == 0 else delta_start
        modifiers = [m for i, m in enumerate(legend.token_modifiers) if bits & (1 << i)]
        word = lines[line][column : column + length]
        out.append(
            f"{line}:{column} {word} {legend.token_types[kind]} {' '.join(modifiers)}".rstrip()
        )
    return out


async def full(client: LanguageClient, uri: str) -> types.SemanticTokens:
    result = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert isinstance(result, types.SemanticTokens)
    return result


CHECKOUT_TOKENS = [
    "1:7 shop namespace crossFile",
    "1:12 models namespace crossFile",
    "1:22 models namespace declaration crossFile",
    "2:5 shop namespace crossFile",
    "2:10 models namespace crossFile",
    "2:24 TAX_RATE variable readonly crossFile",
    "2:34 Basket class crossFile",
    "2:42 Product class crossFile",
    "5:4 total function declaration",
    "5:10 basket parameter declaration",
    "5:18 discount parameter declaration",
    "6:4 subtotal variable declaration",
    "7:8 product variable declaration",
    "7:17 quantity variable declaration",
    "7:29 basket parameter",
    "7:36 lines property",
    "8:8 subtotal variable",
    "8:20 product variable",
    "8:28 price property",
    "8:36 quantity variable",
    "9:4 subtotal variable",
    "9:16 subtotal variable",
    "9:27 discount parameter",
    "10:11 subtotal variable",
    "10:27 TAX_RATE variable readonly crossFile",
    "13:6 Till class declaration",
    "14:8 __init__ method declaration",
    "14:17 self parameter declaration",
    "14:23 name parameter declaration",
    "15:8 self parameter",
    "15:13 name property",
    "15:20 name parameter",
    "17:8 ring_up method declaration",
    "17:16 self parameter declaration",
    "17:22 basket parameter declaration",
    "17:30 Basket class crossFile",
    "17:41 str class defaultLibrary",
    "18:8 amount variable declaration",
    "18:17 total function",
    "18:23 basket parameter",
    "19:8 receipt variable declaration",
    "19:21 self parameter",
    "19:26 name property",
    "19:34 amount variable",
    "20:15 receipt variable",
    "23:4 cheapest function declaration",
    "23:13 products parameter declaration",
    "23:23 list class defaultLibrary",
    "23:28 Product class crossFile",
    "23:41 Product class crossFile",
    "24:11 min function defaultLibrary",
    "24:15 products parameter",
    "24:25 key parameter",
    "24:36 p parameter declaration",
    "24:39 p parameter",
    "24:41 price property",
    "27:4 empty_basket function declaration",
    "27:22 Basket class crossFile",
    "28:11 models namespace crossFile",
    "28:18 Basket class crossFile",
]
"""shop/checkout.py as tokens: cross-file names (with what they are in models.py),
parameters, locals, properties, methods, builtins, declarations."""


async def test_full_tokens_of_a_file_name_every_kind_of_name(
    tokens_client: LanguageClient, shop: Path
) -> None:
    path = shop / CHECKOUT
    uri = open_document(tokens_client, path)
    result = await full(tokens_client, uri)
    assert decode(result.data, legend_of(tokens_client), path.read_text()) == CHECKOUT_TOKENS
    assert result.result_id


async def test_the_legend_follows_what_the_client_supports(
    fresh: LanguageClient, fake: FakeBackend, shop: Path
) -> None:
    capabilities = editor_capabilities("vscode")
    assert capabilities.text_document and capabilities.text_document.semantic_tokens
    semantic = capabilities.text_document.semantic_tokens
    semantic.token_types = ["namespace", "class", "function", "parameter", "variable"]
    semantic.token_modifiers = ["declaration", "defaultLibrary"]
    await start_with(fresh, capabilities, shop, fake)

    legend = legend_of(fresh)
    assert list(legend.token_types) == ["namespace", "class", "function", "parameter", "variable"]
    assert list(legend.token_modifiers) == ["declaration", "defaultLibrary", "crossFile"]
    path = shop / CHECKOUT
    uri = open_document(fresh, path)
    decoded = decode((await full(fresh, uri)).data, legend, path.read_text())
    assert "14:8 __init__ function declaration" in decoded  # a method, as a function
    assert "7:36 lines variable" in decoded  # a property, as a variable
    assert "2:24 TAX_RATE variable crossFile" in decoded  # no readonly modifier


async def test_the_default_legend_of_a_client_that_does_not_say(
    tokens_client: LanguageClient,
) -> None:
    legend = legend_of(tokens_client)
    assert list(legend.token_types) == [
        "namespace", "type", "class", "function", "method", "parameter", "variable", "property"
    ]  # fmt: skip
    assert list(legend.token_modifiers) == [
        "declaration", "readonly", "async", "defaultLibrary", "crossFile"
    ]  # fmt: skip
    provider = tokens_client.semantic_provider  # type: ignore[attr-defined]
    assert provider.full == types.SemanticTokensFullDelta(delta=True)
    assert provider.range is True


async def test_range_tokens_are_the_full_tokens_of_those_lines(
    tokens_client: LanguageClient, shop: Path
) -> None:
    path = shop / CHECKOUT
    uri = open_document(tokens_client, path)
    result = await tokens_client.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=13, character=0), end=types.Position(line=16, character=0)
            ),
        )
    )
    assert isinstance(result, types.SemanticTokens)
    decoded = decode(result.data, legend_of(tokens_client), path.read_text())
    assert decoded == [t for t in CHECKOUT_TOKENS if 13 <= int(t.split(":")[0]) < 16]


async def test_async_methods_and_modules_of_the_models_file(
    tokens_client: LanguageClient, shop: Path
) -> None:
    path = shop / "shop" / "models.py"
    uri = open_document(tokens_client, path)
    decoded = decode(
        (await full(tokens_client, uri)).data, legend_of(tokens_client), path.read_text()
    )
    assert "25:14 save method declaration async" in decoded
    assert "26:14 store parameter" in decoded
    assert "26:20 put method" in decoded
    assert "4:0 TAX_RATE variable declaration readonly" in decoded
    assert "7:1 dataclass function" in decoded
    assert "11:4 sku property declaration" in decoded


async def test_other_languages_get_no_tokens_and_unknown_documents_an_error(
    tokens_client: LanguageClient, shop: Path
) -> None:
    uri = open_document(tokens_client, shop / "notes.txt", "just words\n", "plaintext")
    result = await tokens_client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert result is None
    with pytest.raises(JsonRpcInvalidParams, match="is not open"):
        await full(tokens_client, (shop / "missing.py").as_uri())
    path = shop / CHECKOUT
    assert (await full(tokens_client, open_document(tokens_client, path))).data


# --- deltas ---------------------------------------------------------------------------------

CHECKOUT_SOURCE = (SHOP / CHECKOUT).read_text()
SNIPPETS = st.sampled_from(
    ["x", "basket", " = 1\n", "\n", "def f(a):\n    return a\n", "(", ")", "Basket", ".",
     "import shop.models\n", "    ", "'''", "#", "self.name", "async ", "lambda q: q", ""]
)  # fmt: skip
EDITS = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), SNIPPETS), min_size=1, max_size=4)


def position_of(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


class DeltaSession:
    """One document edited at random; after each edit the client keeps its tokens by
    applying the server's delta, and checks them against a full request."""

    def __init__(self, client: LanguageClient, uri: str, text: str) -> None:
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        self.data: list[int] = []
        self.result_id = ""

    async def start(self) -> None:
        result = await full(self.client, self.uri)
        self.data, self.result_id = list(result.data), result.result_id or ""

    def edit(self, where: float, span: int, inserted: str) -> None:
        start = int(where * len(self.text))
        end = min(len(self.text), start + span)
        self.version += 1
        self.client.text_document_did_change(
            partial_change(
                self.uri,
                self.version,
                position_of(self.text, start),
                position_of(self.text, end),
                inserted,
            )
        )
        self.text = self.text[:start] + inserted + self.text[end:]

    async def check(self) -> None:
        reply = await self.client.text_document_semantic_tokens_full_delta_async(
            types.SemanticTokensDeltaParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri),
                previous_result_id=self.result_id,
            )
        )
        if isinstance(reply, types.SemanticTokensDelta):
            edits = [(e.start, e.delete_count, list(e.data or [])) for e in reply.edits]
            self.data = apply_delta(self.data, edits)
        else:
            assert isinstance(reply, types.SemanticTokens)
            self.data = list(reply.data)
        self.result_id = reply.result_id or ""
        fresh = await full(self.client, self.uri)
        assert self.data == list(fresh.data), self.text
        self.result_id = fresh.result_id or ""


async def test_a_delta_after_no_change_is_empty(tokens_client: LanguageClient, shop: Path) -> None:
    uri = open_document(tokens_client, shop / CHECKOUT)
    first = await full(tokens_client, uri)
    reply = await tokens_client.text_document_semantic_tokens_full_delta_async(
        types.SemanticTokensDeltaParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            previous_result_id=first.result_id or "",
        )
    )
    assert isinstance(reply, types.SemanticTokensDelta)
    assert list(reply.edits) == []
    stale = await tokens_client.text_document_semantic_tokens_full_delta_async(
        types.SemanticTokensDeltaParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id="nope"
        )
    )
    assert isinstance(stale, types.SemanticTokens)  # an unknown id: the whole result
    assert stale.data == first.data


@pytest_lsp.fixture(config=CONFIG)
async def vscode_tokens(
    lsp_client: LanguageClient, fake: FakeBackend, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[None]:
    await started(lsp_client, "vscode", copy_shop(tmp_path_factory.mktemp("delta")), fake)
    yield
    await lsp_client.shutdown_session()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edits=EDITS)
async def test_delta_tokens_equal_full_tokens_after_random_edits(
    vscode_tokens: LanguageClient, edits: list[tuple[float, int, str]]
) -> None:
    client = vscode_tokens
    opened: list[str] = client.__dict__.setdefault("opened", [])
    opened.append(f"edited_{len(opened)}.py")
    uri = open_document(client, Path("/tmp/headstart-delta") / opened[-1], CHECKOUT_SOURCE)
    session = DeltaSession(client, uri, CHECKOUT_SOURCE)
    await session.start()
    for where, span, inserted in edits:
        session.edit(where, span, inserted)
        await session.check()


# --- other languages -------------------------------------------------------------------------

MULTI = Path(__file__).resolve().parent / "fixtures" / "tokens_multi"


@pytest_lsp.fixture(config=CONFIG)
async def multi_client(
    lsp_client: LanguageClient, fake: FakeBackend, tmp_path: Path
) -> AsyncIterator[None]:
    """The server on a copy of the multi-language project (indexed, so that names from
    other project files are known)."""
    root = Path(shutil.copytree(MULTI, tmp_path / "tokens_multi"))
    await started(lsp_client, "vscode", root, fake)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize(
    ("path", "language_id", "expected"),
    [
        ("web/checkout.ts", "typescript", [
            "0:9 Basket class crossFile",
            "0:17 TAX_RATE variable readonly crossFile",
            "1:12 models namespace declaration crossFile",
            "3:5 Total type declaration",
            "5:22 total function declaration async",
            "5:28 basket parameter declaration",
            "5:59 Promise class defaultLibrary",
            "7:28 items property",
            "10:23 makeBasket function crossFile",
            "15:19 name property declaration readonly",
            "21:2 ringUp method declaration",
            "23:34 map method",
        ]),
        ("go/cmd/main.go", "go", [
            "0:8 main namespace declaration",
            "8:6 greeting variable declaration readonly",
            "10:5 counter class declaration",
            "14:18 bump method declaration",
            "14:23 by parameter declaration",
            "20:1 s variable declaration",
            "20:6 store namespace crossFile",
            "20:12 NewStore function crossFile",
            "21:22 Capacity variable readonly crossFile",
            "23:17 len function defaultLibrary",
            "26:5 Println function",
        ]),
    ],
)  # fmt: skip
async def test_typescript_and_go_files_get_tokens_with_cross_file_names(
    multi_client: LanguageClient, path: str, language_id: str, expected: list[str]
) -> None:
    root: Path = multi_client.root  # type: ignore[attr-defined]
    uri = open_document(multi_client, root / path, language_id=language_id)
    result = await full(multi_client, uri)
    decoded = decode(result.data, legend_of(multi_client), (root / path).read_text())
    for token in expected:
        assert token in decoded
    assert result.result_id


TS_SOURCE = (MULTI / "web" / "checkout.ts").read_text()
TS_SNIPPETS = st.sampled_from(
    ["x", "basket", " = 1;\n", "\n", "function f(a) {\n  return a;\n}\n", "(", ")", "{", "}",
     "Basket", ".", "import { Item } from './models';\n", "  ", "`", "//", "this.name",
     "async ", "(q) => q", "const ", ""]
)  # fmt: skip
TS_EDITS = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 12), TS_SNIPPETS), min_size=1, max_size=4
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edits=TS_EDITS)
async def test_typescript_delta_tokens_equal_full_tokens_after_random_edits(
    vscode_tokens: LanguageClient, edits: list[tuple[float, int, str]]
) -> None:
    client = vscode_tokens
    opened: list[str] = client.__dict__.setdefault("opened_ts", [])
    opened.append(f"edited_{len(opened)}.ts")
    uri = open_document(client, Path("/tmp/headstart-delta") / opened[-1], TS_SOURCE, "typescript")
    session = DeltaSession(client, uri, TS_SOURCE)
    await session.start()
    for where, span, inserted in edits:
        session.edit(where, span, inserted)
        await session.check()
