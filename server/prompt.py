"""Fill-in-the-middle prompts.

This slice has one template, Qwen2.5-Coder's repository-level FIM, fed from the current
file only and budgeted in characters (the token-budgeted, dependency-aware context is a
later step). The prefix is trimmed from the top and the suffix from the bottom, at line
boundaries, so the text nearest the cursor always survives.
"""

from __future__ import annotations

from dataclasses import dataclass

QWEN_FIM_STOPS = ("<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|im_end|>")
"""Strings that end a Qwen2.5-Coder FIM answer; OpenAI-compatible servers take at most four."""

QWEN_FIM_STOP_IDS = (151643, 151644, 151645, 151659, 151660, 151661, 151662, 151663, 151664)
"""The same tokens as ids. vLLM drops special tokens from the text it streams, so stop
strings alone would never see them."""


@dataclass(frozen=True)
class FimPrompt:
    text: str
    prefix: str
    suffix: str
    stop: tuple[str, ...]
    stop_token_ids: tuple[int, ...]


def clip_prefix(prefix: str, budget: int) -> str:
    """The last `budget` characters of `prefix`, starting at a line start when possible."""
    if len(prefix) <= budget:
        return prefix
    clipped = prefix[len(prefix) - budget :]
    newline = clipped.find("\n")
    return clipped[newline + 1 :] if newline != -1 else clipped


def clip_suffix(suffix: str, budget: int) -> str:
    """The first `budget` characters of `suffix`, ending at a line end when possible."""
    if len(suffix) <= budget:
        return suffix
    clipped = suffix[:budget]
    newline = clipped.rfind("\n")
    return clipped[: newline + 1] if newline != -1 else clipped


def qwen_fim_prompt(
    prefix: str,
    suffix: str,
    *,
    repo_name: str,
    file_path: str,
    prefix_chars: int,
    suffix_chars: int,
) -> FimPrompt:
    """Qwen2.5-Coder repository-level FIM: repo header, file path, then prefix/suffix/middle."""
    prefix = clip_prefix(prefix, prefix_chars)
    suffix = clip_suffix(suffix, suffix_chars)
    text = (
        f"<|repo_name|>{repo_name}\n<|file_sep|>{file_path}\n"
        f"<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    )
    return FimPrompt(
        text=text,
        prefix=prefix,
        suffix=suffix,
        stop=QWEN_FIM_STOPS,
        stop_token_ids=QWEN_FIM_STOP_IDS,
    )
