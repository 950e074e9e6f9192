"""The prompt a request sends, as the backend's tokenizer counts it, fits the budget.

The context builder budgets its parts separately; this checks the whole rendered prompt
of every template, encoded by a real BPE tokenizer, on a real project index.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizer_helpers import tiny_tokenizer

from cache.index import ProjectIndex
from server.completion.context import ContextBuilder
from server.completion.prompt import TEMPLATES
from server.completion.request import CursorContext, Prompting, budget_for, plan_request
from server.completion.token_count import TokenCounter
from server.config import CompletionSettings

FIXTURE = Path(__file__).parent / "fixtures" / "context_py"
SERVICE = "app/service.py"
COUNTER = TokenCounter(tiny_tokenizer(), source="tiny test tokenizer")


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextBuilder]:
    tmp = tmp_path_factory.mktemp("complete")
    root = Path(shutil.copytree(FIXTURE, tmp / "context_py"))
    index = ProjectIndex(root, cache_dir=tmp / "cache")
    index.build()
    yield ContextBuilder(index)
    index.close()


lines = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r"), max_size=50)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    family=st.sampled_from(sorted(TEMPLATES)),
    typed=st.lists(lines, max_size=30).map("\n".join),
    total=st.integers(min_value=200, max_value=3000),
    cross=st.floats(min_value=0, max_value=0.6),
    suffix_share=st.floats(min_value=0, max_value=0.3),
)
def test_the_rendered_prompt_fits_the_budget(
    builder: ContextBuilder,
    family: str,
    typed: str,
    total: int,
    cross: float,
    suffix_share: float,
) -> None:
    base = (builder.index.root / SERVICE).read_text()  # type: ignore[union-attr]
    anchor = base.index("        pass\n")
    text = base[:anchor] + "        util." + typed + base[anchor:]
    offset = anchor + len("        util.") + len(typed)
    settings_ = CompletionSettings(
        context_tokens=total, cross_file_share=cross, suffix_share=suffix_share
    )
    template = TEMPLATES[family].with_tokenizer(COUNTER)
    ctx = CursorContext(text, offset, SERVICE, "context_py", "python", builder)

    request, _ = plan_request(ctx, settings_, Prompting(template, COUNTER))

    assert len(COUNTER.tokenizer.encode(request.prompt).ids) <= total  # type: ignore[union-attr]


def test_similar_code_takes_only_what_the_other_shares_leave_the_prefix(
    builder: ContextBuilder,
) -> None:
    ctx = CursorContext("x = 1\n", 6, SERVICE, "context_py", "python", builder)
    prompting = Prompting(TEMPLATES["qwen"].with_tokenizer(COUNTER), COUNTER)
    roomy = budget_for(CompletionSettings(), prompting, ctx)
    assert roomy.similar_share == 0.15
    crowded = CompletionSettings(suffix_share=0.1, cross_file_share=0.75)
    assert budget_for(crowded, prompting, ctx).similar_share == pytest.approx(0.05)
    off = CompletionSettings(similar_code_share=0)
    assert budget_for(off, prompting, ctx).similar_cap == 0
