"""The suggestion cache on its own: which typing a shown suggestion still answers."""

from __future__ import annotations

from server.completion.suggestion_cache import SuggestionCache, premise

FILE = "import os\n\n\ndef f(warehouse):\n    net = █\n    return net\n\n\nx = 1\n"
SUGGESTION = "total_value(warehouse)"


def at(text: str) -> tuple[str, int]:
    offset = text.index("█")
    return text.replace("█", ""), offset


def shown(suggestion: str = SUGGESTION, text: str = FILE) -> SuggestionCache[str]:
    cache: SuggestionCache[str] = SuggestionCache()
    cache.remember("doc", *at(text), suggestion, "line")
    return cache


def rest(cache: SuggestionCache[str], text: str, key: str = "doc") -> str | None:
    hit = cache.lookup(key, *at(text))
    return None if hit is None else hit.rest


def test_typing_the_suggestion_gets_its_rest() -> None:
    cache = shown()
    assert rest(cache, FILE) == SUGGESTION
    assert rest(cache, FILE.replace("█", "t█")) == SUGGESTION[1:]
    assert rest(cache, FILE.replace("█", "tot█")) == "al_value(warehouse)"
    hit = cache.lookup("doc", *at(FILE.replace("█", "total_█")))
    assert hit is not None and hit.typed == 6 and hit.meta == "line"


def test_a_character_the_suggestion_did_not_predict_is_a_miss() -> None:
    cache = shown()
    assert rest(cache, FILE.replace("█", "tox█")) is None
    assert rest(cache, FILE.replace("█", "x█")) is None


def test_typing_all_of_it_leaves_nothing_to_serve() -> None:
    assert rest(shown(), FILE.replace("█", SUGGESTION + "█")) is None


def test_edits_near_the_cursor_are_misses() -> None:
    cache = shown()
    typed = FILE.replace("█", "tot█")
    assert rest(cache, typed.replace("return net", "return 0")) is None  # a line below
    assert rest(cache, typed.replace("def f(warehouse)", "def g(warehouse)")) is None
    assert rest(cache, typed.replace("net = ", "gross = ")) is None  # the line's prefix
    assert rest(cache, typed.replace("tot█", "tot█)")) is None  # after the cursor


def test_edits_far_away_do_not_matter() -> None:
    cache = shown()
    typed = FILE.replace("█", "tot█")
    far = typed.replace("import os", "import os\nimport sys\n").replace("x = 1", "x = 2")
    assert rest(cache, far) == "al_value(warehouse)"


def test_another_document_or_line_is_a_miss() -> None:
    cache = shown()
    assert rest(cache, FILE.replace("█", "tot█"), key="other") is None
    assert rest(cache, FILE.replace("█", "").replace("x = 1", "x = 1tot█")) is None


def test_deleting_back_serves_an_earlier_suggestion_again() -> None:
    cache = shown()
    cache.remember("doc", *at(FILE.replace("█", "x█")), "_total", "line")
    assert rest(cache, FILE.replace("█", "x_t█")) == "otal"
    assert rest(cache, FILE.replace("█", "to█")) == SUGGESTION[2:]


def test_a_multi_line_suggestion_continues_after_its_newline() -> None:
    block = "total(warehouse)\n    net += 1"
    cache = shown(block)
    assert rest(cache, FILE.replace("█", "total(warehouse)█")) == "\n    net += 1"
    assert rest(cache, FILE.replace("█", "total(warehouse)\n█")) == "    net += 1"
    assert rest(cache, FILE.replace("█", "total(warehouse)\n    ne█")) == "t += 1"
    assert rest(cache, FILE.replace("█", "total(warehouse)\n    nx█")) is None
    assert rest(cache, FILE.replace("█", "total(warehouse)\n    net += 1█")) is None


def test_the_least_recently_used_suggestion_is_dropped() -> None:
    cache: SuggestionCache[str] = SuggestionCache(per_document=2)
    for word in ("a", "b", "c"):
        cache.remember("doc", *at(FILE.replace("█", word + "█")), "_" + word, "line")
    assert rest(cache, FILE.replace("█", "a_█")) is None
    assert rest(cache, FILE.replace("█", "b_█")) == "b"
    assert rest(cache, FILE.replace("█", "c_█")) == "c"


def test_forget_and_empty_suggestions() -> None:
    cache = shown()
    cache.remember("doc", *at(FILE.replace("█", "q█")), "", "line")
    assert rest(cache, FILE.replace("█", "q█")) is None
    cache.forget("doc")
    assert rest(cache, FILE) is None


def test_premise_is_a_few_lines_either_side() -> None:
    text, offset = at("1\n2\n3\n4\n5 █x\n6\n7\n8\n9\n")
    assert premise(text, offset) == ("2\n3\n4\n5 ", "x\n6\n7\n8\n")
    text, offset = at("a█b")
    assert premise(text, offset) == ("a", "b")
