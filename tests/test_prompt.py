"""The Qwen2.5-Coder FIM prompt and its character budget."""

from server.prompt import QWEN_FIM_STOPS, clip_prefix, clip_suffix, qwen_fim_prompt


def test_prompt_has_repo_header_file_and_fim_parts_in_order() -> None:
    prompt = qwen_fim_prompt(
        "def f():\n    ",
        "\nprint(f())\n",
        repo_name="demo",
        file_path="pkg/a.py",
        prefix_chars=100,
        suffix_chars=100,
    )
    assert prompt.text == (
        "<|repo_name|>demo\n<|file_sep|>pkg/a.py\n"
        "<|fim_prefix|>def f():\n    <|fim_suffix|>\nprint(f())\n<|fim_middle|>"
    )
    assert "<|endoftext|>" in prompt.stop
    assert prompt.stop == QWEN_FIM_STOPS
    assert 151643 in prompt.stop_token_ids


def test_prefix_is_clipped_from_the_top_at_a_line_start() -> None:
    prefix = "".join(f"line {i}\n" for i in range(100)) + "x = "
    clipped = clip_prefix(prefix, 30)
    assert len(clipped) <= 30
    assert clipped.endswith("x = ")
    assert clipped.startswith("line ")


def test_suffix_is_clipped_from_the_bottom_at_a_line_end() -> None:
    suffix = "".join(f"line {i}\n" for i in range(100))
    clipped = clip_suffix(suffix, 30)
    assert len(clipped) <= 30
    assert clipped.endswith("\n")
    assert suffix.startswith(clipped)


def test_budgets_larger_than_the_text_keep_it_whole() -> None:
    assert clip_prefix("abc", 10) == "abc"
    assert clip_suffix("abc", 10) == "abc"
    assert clip_prefix("abc", 0) == ""
