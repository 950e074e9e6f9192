"""Token counting with the model's own tokenizer, fast enough for every keystroke.

The tokenizer (a Hugging Face `tokenizer.json`, loaded with `tokenizers`) comes from, in
order: the `completion.tokenizer` setting (the file or a folder holding it); the model
name the backend reports when it is a local folder (vLLM reports the path it serves when
no served-model-name is given); the local Hugging Face cache, through huggingface_hub's
offline lookup. Nothing is ever downloaded.
Without a tokenizer, counts are estimated at `CHARS_PER_TOKEN` characters per token.

Encoding is not cheap: the Qwen2.5-Coder tokenizer takes about 2 ms for a 6,000-character
prefix on this machine, most of the 5 ms budget for a whole context. Text that changes on
every keystroke (the prefix and suffix) is therefore counted per line, each line's count
cached under the xxh3 of its text, so a keystroke re-encodes only the line it changed.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

import xxhash
from tokenizers import Tokenizer

if TYPE_CHECKING:
    from huggingface_hub import CachedRepoInfo

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.5
"""Characters per token when no tokenizer is available.

Measured with the Qwen2.5-Coder tokenizer: 4.24 characters per token over CPython 3.11's
top-level standard-library modules (4.7 M characters; median file 4.18, tenth percentile
2.93), 3.64 over the whole standard library with its tests and data, 3.67 over 300
JavaScript files. 3.5 over-counts typical code a little, so an estimated budget is
rarely exceeded.
"""

TOKENIZER_FILE = "tokenizer.json"


def text_key(text: str) -> int:
    """The cache key of a text: xxh3-64 of its UTF-8 (lone surrogates kept as they are)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"))


class Fit(NamedTuple):
    """Text cut to a token budget, and its tokens (the per-line count, see `count_lines`)."""

    text: str
    tokens: int


V = TypeVar("V")


class Generations(Generic[V]):
    """A bounded map from text hash to what the tokenizer made of it, in two generations.

    When the young generation fills up, it becomes the old one and the previous old one
    is dropped; a hit in the old generation is promoted. That keeps recently used entries
    like an LRU does, with no bookkeeping on a hit.
    """

    def __init__(self, capacity: int) -> None:
        self._half = max(1, capacity // 2)
        self._young: dict[int, V] = {}
        self._old: dict[int, V] = {}

    def get(self, key: int) -> V | None:
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: int, value: V) -> None:
        if len(self._young) >= self._half:
            self._old = self._young
            self._young = {}
        self._young[key] = value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)


class TokenCounter:
    """Counts tokens as the model's tokenizer does, or estimates them without one.

    `count` is exact (the length of the tokenizer's own encoding, without BOS/EOS) and
    cached per text: use it for snippets, which repeat across keystrokes. `count_lines`,
    `fit_head` and `fit_tail` count line by line with a per-line cache: use them for the
    current file's prefix and suffix. A per-line count never undercounts in practice: it
    is 1.5% above the exact count on the standard library (blank-line runs that encode
    as one token count one per line), so a fitted text stays within its budget.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        *,
        source: str = "estimate",
        cache_size: int = 65_536,
    ) -> None:
        self.tokenizer = tokenizer
        self.source = source
        """Where the tokenizer came from, for logs (a path), or "estimate"."""
        self._texts: Generations[int] = Generations(cache_size // 8)
        self._lines: Generations[int] = Generations(cache_size)

    def cached(self) -> int:
        """Texts and lines whose counts are kept."""
        return len(self._texts) + len(self._lines)

    @property
    def exact(self) -> bool:
        """True when counts come from a real tokenizer, False when they are estimates."""
        return self.tokenizer is not None

    def count(self, text: str) -> int:
        """Tokens in `text`: exact with a tokenizer, cached by the text's xxh3."""
        if not text:
            return 0
        if self.tokenizer is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        key = text_key(text)
        cached = self._texts.get(key)
        if cached is None:
            cached = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
            self._texts.put(key, cached)
        return cached

    def count_lines(self, text: str) -> int:
        """Tokens in `text` counted line by line: an upper bound of `count`, cached per line."""
        return sum(self._line_counts(text.splitlines(keepends=True)))

    def fit_tail(self, text: str, budget: int) -> Fit:
        """The longest end of `text` that fits `budget` tokens, starting at a line start.

        For a prefix: the lines nearest the cursor survive. If even the last line does not
        fit, its longest fitting end is kept, cut anywhere.
        """
        if budget <= 0 or not text:
            return Fit("", 0)
        window = self._window_chars(budget)
        while True:
            start = max(0, len(text) - window)
            if start > 0:  # begin at a line start inside the window
                newline = text.find("\n", start - 1)
                start = len(text) if newline == -1 else newline + 1
            lines = text[start:].splitlines(keepends=True)
            counts = self._line_counts(lines)
            used, kept = 0, len(lines)
            while kept > 0 and used + counts[kept - 1] <= budget:
                kept -= 1
                used += counts[kept]
            if kept > 0 or start == 0:
                break
            window *= 2  # the whole window fitted: look further back
        offset = start + sum(len(line) for line in lines[:kept])
        if offset == len(text) and lines:
            return self._cut_tail(lines[-1], budget)
        return Fit(text[offset:], used)

    def fit_head(self, text: str, budget: int) -> Fit:
        """The longest start of `text` that fits `budget` tokens, ending at a line end.

        For a suffix or a snippet: the lines nearest the start survive. If even the first
        line does not fit, its longest fitting start is kept, cut anywhere.
        """
        if budget <= 0 or not text:
            return Fit("", 0)
        window = self._window_chars(budget)
        while True:
            end = min(len(text), window)
            if end < len(text):  # end at a line end inside the window
                newline = text.rfind("\n", 0, end)
                end = 0 if newline == -1 else newline + 1
            lines = text[:end].splitlines(keepends=True)
            counts = self._line_counts(lines)
            used = kept = 0
            while kept < len(lines) and used + counts[kept] <= budget:
                used += counts[kept]
                kept += 1
            if kept < len(lines) or end == len(text):
                break
            window *= 2
        if kept == 0:
            first = text[: text.find("\n") + 1] or text
            return self._cut_head(first, budget)
        return Fit(text[: sum(len(line) for line in lines[:kept])], used)

    def decode(self, ids: Sequence[int]) -> str | None:
        """The text of token ids, or None without the model's tokenizer."""
        if self.tokenizer is None:
            return None
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def token_id(self, token: str) -> int | None:
        """The id of a (special) token in the tokenizer's vocabulary, if there is one."""
        return None if self.tokenizer is None else self.tokenizer.token_to_id(token)

    def _window_chars(self, budget: int) -> int:
        # Generous: 8 characters per token is more than code reaches, except long runs of
        # spaces; if a window turns out too small, the fit loops widen it.
        return budget * 8 + 1

    def _line_counts(self, lines: Sequence[str]) -> list[int]:
        if self.tokenizer is None:
            return [math.ceil(len(line) / CHARS_PER_TOKEN) for line in lines]
        keys = [text_key(line) for line in lines]
        counts = [self._lines.get(key) for key in keys]
        missing = [i for i, n in enumerate(counts) if n is None]
        if missing:
            encoded = self.tokenizer.encode_batch_fast(
                [lines[i] for i in missing], add_special_tokens=False
            )
            for i, encoding in zip(missing, encoded, strict=True):
                counts[i] = len(encoding.ids)
                self._lines.put(keys[i], len(encoding.ids))
        return [n or 0 for n in counts]

    def _cut_tail(self, line: str, budget: int) -> Fit:
        """The longest end of one line within budget (binary search on exact counts)."""
        low, high = 0, len(line)  # candidate start offsets; `high` always fits (empty)
        while low < high:
            middle = (low + high) // 2
            if self.count(line[middle:]) <= budget:
                high = middle
            else:
                low = middle + 1
        return Fit(line[high:], self.count(line[high:]))

    def _cut_head(self, line: str, budget: int) -> Fit:
        """The longest start of one line within budget (binary search on exact counts)."""
        low, high = 0, len(line)  # candidate end offsets; `low` always fits (empty)
        while low < high:
            middle = (low + high + 1) // 2
            if self.count(line[:middle]) <= budget:
                low = middle
            else:
                high = middle - 1
        return Fit(line[:low], self.count(line[:low]))


def find_tokenizer_file(
    setting: str | None, model_name: str | None, hub_cache: Path | None = None
) -> tuple[Path, str] | None:
    """The tokenizer.json to use and why, or None: the setting (a .json file or a folder
    holding tokenizer.json), the model name when it is an absolute folder path, then the
    Hugging Face cache (`hub_cache`, else the one HF_HUB_CACHE / HF_HOME name). Never
    downloads."""
    if setting:
        found = _tokenizer_at(Path(setting).expanduser())
        if found is not None:
            return found, "completion.tokenizer"
        log.warning("completion.tokenizer %r has no %s; looking elsewhere", setting, TOKENIZER_FILE)
    if model_name:
        folder = Path(model_name).expanduser()  # relative: another process's folder
        found = _tokenizer_at(folder) if folder.is_absolute() else None
        if found is not None:
            return found, "the model's folder"
        found = _hf_cache_tokenizer(model_name, hub_cache)
        if found is not None:
            return found, "the Hugging Face cache"
    return None


def load_token_counter(
    setting: str | None, model_name: str | None, hub_cache: Path | None = None
) -> TokenCounter:
    """A TokenCounter for this model, with one info line saying where its tokenizer came
    from or that counts are estimated. Loading takes ~0.4 s: call it off the event loop."""
    found = find_tokenizer_file(setting, model_name, hub_cache)
    if found is not None:
        path, why = found
        try:
            tokenizer = _load_tokenizer(str(path), path.stat().st_mtime_ns)
        except Exception as exc:  # a corrupt or foreign file: estimate rather than fail
            log.warning("cannot load tokenizer %s: %s", path, exc)
        else:
            log.info("token counting: tokenizer %s (from %s)", path, why)
            return TokenCounter(tokenizer, source=str(path))
    log.info(
        "token counting: no local tokenizer for model %r; estimating %.1f characters per token",
        model_name,
        CHARS_PER_TOKEN,
    )
    return TokenCounter()


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str, mtime_ns: int) -> Tokenizer:
    """Loaded once per file version: settings changes and new windows reuse it."""
    return Tokenizer.from_file(path)


def _tokenizer_at(path: Path) -> Path | None:
    try:
        if path.suffix == ".json" and path.is_file():
            return path
        candidate = path / TOKENIZER_FILE
        return candidate if candidate.is_file() else None
    except OSError:  # a name too long or otherwise unusable as a path
        return None


def _hf_cache_tokenizer(model_name: str, hub_cache: Path | None) -> Path | None:
    """tokenizer.json of the model in the local Hugging Face cache, found as huggingface_hub
    finds files offline: the revision `refs/main` names, else the newest snapshot that has
    one. A name without an org matches any org, if only one has it. The cache is scanned
    (one stat a file), once per model served. huggingface_hub is imported here, when a
    model is first served: importing it takes ~0.4 s, which a server's start should not."""
    from huggingface_hub import CacheNotFound, scan_cache_dir, try_to_load_from_cache

    try:
        cached = scan_cache_dir(hub_cache)
    except (CacheNotFound, OSError):
        return None
    name = model_name.strip("/").lower()
    repos = [
        repo
        for repo in cached.repos
        if repo.repo_type == "model"
        and (repo.repo_id.lower() == name or ("/" not in name and _bare_name(repo) == name))
    ]
    if len(repos) != 1:
        return None
    repo = repos[0]
    on_main = try_to_load_from_cache(repo.repo_id, TOKENIZER_FILE, cache_dir=hub_cache)
    if isinstance(on_main, str):
        return Path(on_main)
    with_file = [
        revision
        for revision in repo.revisions
        if any(f.file_path == revision.snapshot_path / TOKENIZER_FILE for f in revision.files)
    ]
    newest = max(with_file, key=lambda revision: revision.last_modified, default=None)
    return None if newest is None else newest.snapshot_path / TOKENIZER_FILE


def _bare_name(repo: CachedRepoInfo) -> str:
    return repo.repo_id.rsplit("/", 1)[-1].lower()
