"""Fill-in-the-middle prompts, one template per model family.

A template renders the stable parts first (the repository header, then the cross-file
snippets in the order the caller gives, then the current file's path) and the parts that
change on every keystroke last, so consecutive prompts share a long prefix and vLLM's
prefix cache reuses its KV blocks. Templates are built once at import; choosing one is a
cached dict lookup and rendering is string concatenation, nothing more.

Families, each checked against the model's published prompt format and special tokens:
- "qwen": Qwen2.5-Coder repository-level FIM (`<|repo_name|>`, `<|file_sep|>` per file,
  then `<|fim_prefix|>…<|fim_suffix|>…<|fim_middle|>` in the current file).
- "starcoder2": StarCoder2 repository context (`<repo_name>`, `<file_sep>` per file, the
  current file as `<file_sep><fim_prefix>{path}\\n…<fim_suffix>…<fim_middle>`).
- "deepseek": DeepSeek-Coder (`<|fim▁begin|>…<|fim▁hole|>…<|fim▁end|>`, the bars being
  U+FF5C); other files go into the prefix after a comment naming their path, as in its
  repository-level example.
- "codellama": Code Llama infilling (`<PRE> {prefix} <SUF>{suffix} <MID>`), other files as
  path comments at the start of the prefix.
- "codestral": Codestral (`[SUFFIX]{suffix}[PREFIX]{prefix}`), other files likewise.

Two layouts of the current file (`completion.promptLayout`). "cursor": the prefix is all
the text before the cursor. "lineStart": the hole starts at the cursor line's start, so
the prefix ends with the lines above, the suffix is the rest of the line and the lines
below, and the part of the line typed so far (the middle) comes after the middle marker,
where the model's answer continues it, as llama.cpp's `/infill` lays out its `prompt`:
every key typed on a line then shares the prompt up to the middle marker, and the backend
computes the few typed tokens again instead of the whole suffix. Qwen, StarCoder2 and
DeepSeek take it. Codestral's prompt ends with the prefix anyway, so the typed part is
already last. Code Llama's SentencePiece tokenizer puts a space before text that follows
` <MID>`, so its prompts keep the typed part in the prefix.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from server.completion.token_count import TokenCounter

log = logging.getLogger(__name__)

Snippets = Sequence[tuple[str, str]]
"""Cross-file context: (workspace-relative path, text) pairs, rendered in the given order."""


@dataclass(frozen=True)
class FimPrompt:
    text: str
    prefix: str
    suffix: str
    stop: tuple[str, ...]
    stop_token_ids: tuple[int, ...]
    middle: str = ""
    """The typed part of the cursor's line, at the end of `text` after the middle marker
    ("lineStart"); `prefix` then ends at the line's start. The answer continues it."""


PromptLayout = Literal["cursor", "lineStart"]
"""`completion.promptLayout`: where the fill-in-the-middle hole starts."""


def split_at_line_start(prefix: str) -> tuple[str, str]:
    """`prefix` as (the text up to the cursor line's start, the typed part of the line).
    A typed part of white space alone stays in the prefix: after the middle marker it
    would be a token the model has to continue mid-indentation, for no gain."""
    start = prefix.rfind("\n") + 1
    typed = prefix[start:]
    if not typed.strip():
        return prefix, ""
    return prefix[:start], typed


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


_LINE_COMMENTS = {
    **dict.fromkeys(
        (
            *("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "java", "js", "jsx", "mjs"),
            *("cjs", "ts", "tsx", "go", "rs", "swift", "kt", "kts", "scala", "dart", "php"),
            *("zig", "proto", "sol", "groovy", "fs", "fsx", "v"),
        ),
        "//",
    ),
    **dict.fromkeys(("lua", "sql", "hs", "elm", "ada", "adb", "ads", "vhd", "vhdl"), "--"),
    **dict.fromkeys(("clj", "cljs", "el", "lisp", "scm", "rkt"), ";"),
    **dict.fromkeys(("erl", "hrl", "tex"), "%"),
}
"""Line-comment markers by file extension; anything else gets `#`."""


def path_comment(path: str) -> str:
    """A line naming `path` in the comment syntax of its language (`# a/b.py`)."""
    extension = path.rpartition(".")[2].lower() if "." in path.rpartition("/")[2] else ""
    return f"{_LINE_COMMENTS.get(extension, '#')} {path}\n"


def _comment_snippet(path: str, text: str) -> str:
    """Another file for families without file tokens: path comment, text, blank line."""
    return f"{path_comment(path)}{_with_newline(text)}\n"


def _files_as_comments(snippets: Snippets, file_path: str) -> str:
    """Other files as path comment + text, then the current file's path comment."""
    parts = [_comment_snippet(path, text) for path, text in snippets]
    parts.append(path_comment(file_path))
    return "".join(parts)


def _qwen_snippet(path: str, text: str) -> str:
    return f"<|file_sep|>{path}\n{_with_newline(text)}"


def _starcoder2_snippet(path: str, text: str) -> str:
    return f"<file_sep>{path}\n{_with_newline(text)}"


def _qwen(
    repo_name: str, snippets: Snippets, file_path: str, prefix: str, suffix: str, middle: str
) -> str:
    # Format of QwenLM/Qwen2.5-Coder examples/Qwen2.5-Coder-repolevel-fim.py.
    files = "".join(_qwen_snippet(path, text) for path, text in snippets)
    return (
        f"<|repo_name|>{repo_name}\n{files}<|file_sep|>{file_path}\n"
        f"<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>{middle}"
    )


def _starcoder2(
    repo_name: str, snippets: Snippets, file_path: str, prefix: str, suffix: str, middle: str
) -> str:
    # StarCoder2 paper (arXiv 2402.19173, section 5.1): "<repo_name>reponame<file_sep>
    # filepath0\ncode0<file_sep><fim_prefix>filepath1\ncode1_pre<fim_suffix>code1_suf
    # <fim_middle>code1_mid<file_sep>…<|endoftext|>".
    files = "".join(_starcoder2_snippet(path, text) for path, text in snippets)
    return (
        f"<repo_name>{repo_name}{files}<file_sep><fim_prefix>{file_path}\n"
        f"{prefix}<fim_suffix>{suffix}<fim_middle>{middle}"
    )


def _deepseek_token(name: str) -> str:
    """DeepSeek-Coder's special tokens sit between FULLWIDTH VERTICAL LINEs (U+FF5C)."""
    return f"<\uff5c{name}\uff5c>"


_DS_BEGIN = _deepseek_token("fim▁begin")
_DS_HOLE = _deepseek_token("fim▁hole")
_DS_END = _deepseek_token("fim▁end")
_DS_EOS = _deepseek_token("end▁of▁sentence")


def _deepseek(
    repo_name: str, snippets: Snippets, file_path: str, prefix: str, suffix: str, middle: str
) -> str:
    # deepseek-ai/DeepSeek-Coder README: code insertion "<|fim▁begin|>…<|fim▁hole|>…
    # <|fim▁end|>" (fullwidth bars); repository-level completion puts "# path" before
    # each file.
    files = _files_as_comments(snippets, file_path)
    return f"{_DS_BEGIN}{files}{prefix}{_DS_HOLE}{suffix}{_DS_END}{middle}"


def _codellama(
    repo_name: str, snippets: Snippets, file_path: str, prefix: str, suffix: str, middle: str
) -> str:
    # Code Llama paper (arXiv 2308.12950) and meta-llama/codellama generation.py: prefix,
    # suffix, middle sentinels ▁<PRE> ▁<SUF> ▁<MID>, the answer ends with ▁<EOT>. Text
    # after ▁<MID> would get SentencePiece's leading space, so a middle stays in the prefix.
    files = _files_as_comments(snippets, file_path) if snippets else ""
    return f"<PRE> {files}{prefix}{middle} <SUF>{suffix} <MID>"


def _codestral(
    repo_name: str, snippets: Snippets, file_path: str, prefix: str, suffix: str, middle: str
) -> str:
    # mistral-common's FIM encoding for Codestral: <s>[SUFFIX]suffix[PREFIX]prefix (the
    # server's tokenizer adds <s>). The suffix comes first, so it must stay stable while
    # the user types at the cursor; it does, as the text after the cursor does not change.
    # The typed part of the line ends the prompt in either layout.
    files = _files_as_comments(snippets, file_path) if snippets else ""
    return f"[SUFFIX]{suffix}[PREFIX]{files}{prefix}{middle}"


Render = Callable[[str, Snippets, str, str, str, str], str]


def _broken(match: re.Match[str]) -> str:
    """A special-token string with a zero-width space after its first character."""
    token = match.group()
    return token[0] + "\u200b" + token[1:]


@dataclass(frozen=True)
class PromptTemplate:
    """One family's prompt format, and how its answers end."""

    family: str
    render_fn: Render
    snippet_fn: Callable[[str, str], str]
    stop: tuple[str, ...]
    """Stop strings, at most four (OpenAI-compatible servers refuse more)."""
    stop_tokens: tuple[str, ...]
    """Special tokens that end an answer; their ids come from the loaded tokenizer."""
    stop_token_ids: tuple[int, ...] = ()
    """Ids of `stop_tokens` (vLLM drops special tokens from streamed text, so stop strings
    alone never see them): known defaults until `with_tokenizer` derives them."""
    line_start: bool = False
    """Whether the "lineStart" layout puts the typed part after the middle marker; where
    False, its prompts are the "cursor" layout's."""
    _markers: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.stop) <= 4:
            raise ValueError(f"{self.family}: 1 to 4 stop strings, got {len(self.stop)}")
        markers = {token.lstrip("▁") for token in (*self.stop_tokens, *self.stop)}
        pattern = "|".join(map(re.escape, sorted(markers, key=len, reverse=True)))
        object.__setattr__(self, "_markers", re.compile(pattern))

    def defuse(self, text: str) -> str:
        """`text` with this family's special-token strings broken by a zero-width space.

        The backend reads those strings in a prompt as control tokens, so a file that
        merely contains `<|file_sep|>` (tokenizer code, this very module) would otherwise
        end a snippet or the prompt early."""
        if self._markers.search(text) is None:
            return text
        return self._markers.sub(_broken, text)

    def _defused(
        self,
        repo_name: str,
        snippets: Snippets,
        file_path: str,
        prefix: str,
        suffix: str,
        middle: str,
    ) -> tuple[str, Snippets, str, str, str, str]:
        clean = self.defuse
        return (
            clean(repo_name),
            [(clean(path), clean(text)) for path, text in snippets],
            clean(file_path),
            clean(prefix),
            clean(suffix),
            clean(middle),
        )

    def render(
        self,
        *,
        repo_name: str,
        snippets: Snippets = (),
        file_path: str,
        prefix: str,
        suffix: str,
        middle: str = "",
    ) -> str:
        """The prompt text: header, snippets in the order given, then the current file,
        with `middle` (the typed part of the line, "lineStart") after the middle marker."""
        return self.render_fn(
            *self._defused(repo_name, snippets, file_path, prefix, suffix, middle)
        )

    def snippet(self, path: str, text: str) -> str:
        """The exact text one snippet adds to `render`'s output (for its token cost).

        The rest of a prompt (header, markers, the current file's path) costs
        `count(render(..., prefix="", suffix=""))`, which stays cached while the snippets
        do not change; prefix and suffix add about their own `count_lines`.
        """
        return self.snippet_fn(self.defuse(path), self.defuse(text))

    def prompt(
        self,
        *,
        repo_name: str,
        snippets: Snippets = (),
        file_path: str,
        prefix: str,
        suffix: str,
        layout: PromptLayout = "cursor",
    ) -> FimPrompt:
        """The rendered prompt with this template's stop strings and ids; `prefix` is all
        the text before the cursor, which "lineStart" splits at the line's start."""
        middle = ""
        if layout == "lineStart" and self.line_start:
            prefix, middle = split_at_line_start(prefix)
        text = self.render(
            repo_name=repo_name,
            snippets=snippets,
            file_path=file_path,
            prefix=prefix,
            suffix=suffix,
            middle=middle,
        )
        return FimPrompt(text, prefix, suffix, self.stop, self.stop_token_ids, middle)

    def with_tokenizer(self, counter: TokenCounter | None) -> PromptTemplate:
        """This template with stop token ids read from the counter's tokenizer, when it has
        one that knows at least one of them; otherwise unchanged (the known defaults)."""
        if counter is None or not counter.exact:
            return self
        ids = tuple(
            dict.fromkeys(
                token_id
                for token_id in map(counter.token_id, self.stop_tokens)
                if token_id is not None
            )
        )
        return replace(self, stop_token_ids=ids) if ids else self


TEMPLATES: dict[str, PromptTemplate] = {
    template.family: template
    for template in (
        PromptTemplate(
            "qwen",
            _qwen,
            _qwen_snippet,
            stop=("<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|im_end|>"),
            stop_tokens=(
                "<|endoftext|>",
                "<|im_start|>",
                "<|im_end|>",
                "<|fim_prefix|>",
                "<|fim_middle|>",
                "<|fim_suffix|>",
                "<|fim_pad|>",
                "<|repo_name|>",
                "<|file_sep|>",
            ),
            # The ids of those tokens in Qwen2.5-Coder's tokenizer.json.
            stop_token_ids=(
                151643,
                151644,
                151645,
                151659,
                151660,
                151661,
                151662,
                151663,
                151664,
            ),
            line_start=True,
        ),
        PromptTemplate(
            "starcoder2",
            _starcoder2,
            _starcoder2_snippet,
            stop=("<|endoftext|>", "<file_sep>", "<fim_prefix>", "<repo_name>"),
            stop_tokens=(
                "<|endoftext|>",
                "<fim_prefix>",
                "<fim_middle>",
                "<fim_suffix>",
                "<fim_pad>",
                "<repo_name>",
                "<file_sep>",
            ),
            line_start=True,
        ),
        PromptTemplate(
            "deepseek",
            _deepseek,
            _comment_snippet,
            stop=(_DS_EOS, _DS_BEGIN, _DS_HOLE, _DS_END),
            stop_tokens=(_DS_EOS, _DS_BEGIN, _DS_HOLE, _DS_END, "<|EOT|>"),
            line_start=True,
        ),
        PromptTemplate(
            "codellama",
            _codellama,
            _comment_snippet,
            stop=("<EOT>", "</s>", "<PRE>", "<SUF>"),
            # tokenizer.json spells the sentinels with SentencePiece's space mark.
            stop_tokens=("▁<EOT>", "</s>", "▁<PRE>", "▁<SUF>", "▁<MID>", "<EOT>"),
        ),
        PromptTemplate(
            "codestral",
            _codestral,
            _comment_snippet,
            stop=("</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"),
            stop_tokens=("</s>", "[PREFIX]", "[SUFFIX]", "[MIDDLE]"),
        ),
    )
}
"""Every template, by family name (the values of `completion.template` besides "auto")."""

DEFAULT_FAMILY = "qwen"

_NAME_HINTS = (
    ("starcoder", "starcoder2"),  # StarCoder 1 shares the FIM tokens; 2 adds repo tokens
    ("deepseek", "deepseek"),
    ("codellama", "codellama"),
    ("code-llama", "codellama"),
    ("code_llama", "codellama"),
    ("codestral", "codestral"),
    ("qwen", "qwen"),
)
"""Substrings of a model's name (its last path component, lowercased) and their family."""


def family_for_model(model_name: str | None) -> str | None:
    """The family a model name points to ("Qwen/Qwen2.5-Coder-1.5B" → "qwen"), or None."""
    if not model_name:
        return None
    name = model_name.replace("\\", "/").rstrip("/").rpartition("/")[2].lower()
    for hint, family in _NAME_HINTS:
        if hint in name:
            return family
    return None


@functools.lru_cache(maxsize=64)
def choose_template(
    setting: str, model_name: str | None, counter: TokenCounter | None = None
) -> PromptTemplate:
    """The template for `completion.template` and the served model, with stop ids from
    the counter's tokenizer. Cached: each request after the first is a dict lookup.

    "auto" picks the family from the model name; an unknown model gets the Qwen template,
    with one log line.
    """
    if setting != "auto":
        if setting not in TEMPLATES:
            raise ValueError(f"unknown prompt template {setting!r}; known: {sorted(TEMPLATES)}")
        family = setting
    else:
        found = family_for_model(model_name)
        if found is None:
            log.info(
                "prompt: no template known for model %r; using %s (set completion.template)",
                model_name,
                DEFAULT_FAMILY,
            )
        family = found or DEFAULT_FAMILY
    return TEMPLATES[family].with_tokenizer(counter)
