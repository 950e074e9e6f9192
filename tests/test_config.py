"""Settings: camelCase layers, environment overrides, clear errors."""

import pytest

from server.config import SettingsError, load_settings


def test_defaults_need_no_input() -> None:
    settings = load_settings(environ={})
    assert settings.backend.url == "http://127.0.0.1:8000/v1"
    assert settings.backend.model is None
    assert settings.completion.max_tokens == 64


def test_camel_case_layers_merge_and_later_wins() -> None:
    settings = load_settings(
        {"backend": {"url": "http://a:1/v1", "firstChunkTimeoutMs": 900}},
        {"backend": {"model": "m"}, "completion": {"maxTokens": 16}},
        environ={},
    )
    assert settings.backend.url == "http://a:1/v1"
    assert settings.backend.first_chunk_timeout_ms == 900
    assert settings.backend.model == "m"
    assert settings.completion.max_tokens == 16


def test_environment_overrides_settings() -> None:
    settings = load_settings(
        {"backend": {"url": "http://a:1/v1", "model": "m"}},
        environ={"HEADSTART_BACKEND_URL": "http://b:2/v1/", "HEADSTART_MODEL": "other"},
    )
    assert settings.backend.url == "http://b:2/v1"
    assert settings.backend.model == "other"


def test_api_key_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "secret")
    settings = load_settings({"backend": {"apiKeyEnv": "MY_KEY"}}, environ={})
    assert settings.api_key() == "secret"
    assert "secret" not in repr(settings)


def test_every_bad_field_is_named() -> None:
    with pytest.raises(SettingsError) as error:
        load_settings(
            {"backend": {"url": "ftp://x", "connectTimeoutMs": -1}, "completion": {"maxTokns": 3}},
            environ={},
        )
    message = str(error.value)
    assert "backend.url" in message and "http://" in message
    assert "backend.connectTimeoutMs" in message
    assert "completion.maxTokns" in message


def test_a_non_object_layer_is_an_error() -> None:
    with pytest.raises(SettingsError, match="must be an object"):
        load_settings(["not", "a", "dict"], environ={})  # type: ignore[arg-type]


def test_languages_switch_completion_per_language_id() -> None:
    settings = load_settings(
        {"completion": {"languages": {"*": False, "python": True}}}, environ={}
    )
    assert settings.completion.enabled_for("python")
    assert not settings.completion.enabled_for("go")
    assert not load_settings(environ={}).completion.enabled_for("plaintext")


def test_prompt_settings_have_defaults_and_take_camel_case() -> None:
    completion = load_settings(environ={}).completion
    assert completion.template == "auto" and completion.tokenizer is None
    assert completion.context_tokens == 4096
    assert (completion.suffix_share, completion.cross_file_share) == (0.1, 0.4)
    completion = load_settings(
        {
            "completion": {
                "template": "deepseek",
                "tokenizer": "/models/coder/tokenizer.json",
                "contextTokens": 4096,
                "suffixShare": 0.2,
                "crossFileShare": 0.2,
            }
        },
        environ={},
    ).completion
    assert completion.template == "deepseek"
    assert completion.tokenizer == "/models/coder/tokenizer.json"
    assert completion.context_tokens == 4096
    assert (completion.suffix_share, completion.cross_file_share) == (0.2, 0.2)


def test_bad_prompt_settings_are_named() -> None:
    with pytest.raises(SettingsError) as error:
        load_settings(
            {
                "completion": {
                    "template": "gpt",
                    "tokenizer": " ",
                    "contextTokens": 10,
                    "suffixShare": -0.1,
                }
            },
            environ={},
        )
    message = str(error.value)
    assert "completion.template" in message and "'codestral'" in message
    assert "completion.tokenizer" in message and "tokenizer.json" in message
    assert "completion.contextTokens" in message
    assert "completion.suffixShare" in message


def test_budget_shares_must_leave_room_for_the_prefix() -> None:
    with pytest.raises(SettingsError, match=r"leave at least 0\.1 for the prefix.*= 0\.95"):
        load_settings({"completion": {"suffixShare": 0.5, "crossFileShare": 0.45}}, environ={})


def test_similar_code_share_is_a_completion_setting_that_zero_turns_off() -> None:
    """`--set similarCodeShare=0` (benchmarks/quality/repo_eval.py) sends the number 0."""
    assert load_settings(environ={}).completion.similar_code_share == 0.15
    completion = load_settings({"completion": {"similarCodeShare": 0}}, environ={}).completion
    assert completion.similar_code_share == 0.0
    with pytest.raises(SettingsError, match=r"completion\.similarCodeShare"):
        load_settings({"completion": {"similarCodeShare": 0.6}}, environ={})


def test_refactor_settings_have_defaults_and_named_bounds() -> None:
    refactor = load_settings(environ={}).refactor
    assert (refactor.max_tokens, refactor.context_tokens) == (2048, 6144)
    assert (refactor.timeout_ms, refactor.max_lines) == (60_000, 400)
    custom = load_settings({"refactor": {"maxTokens": 512, "timeoutMs": 5000}}, environ={})
    assert (custom.refactor.max_tokens, custom.refactor.timeout_ms) == (512, 5000)
    with pytest.raises(SettingsError, match=r"refactor\.timeoutMs"):
        load_settings({"refactor": {"timeoutMs": 10}}, environ={})


def test_the_local_backend_settings_and_their_variables() -> None:
    settings = load_settings(
        {"backend": {"mode": "local", "local": {"gpuMemoryUtilization": 0.3, "port": 8011}}},
        environ={"HEADSTART_LOCAL_MODEL": "/models/coder"},
    )
    local = settings.backend.local
    assert settings.backend.mode == "local"
    assert (local.model, local.gpu_memory_utilization, local.port) == ("/models/coder", 0.3, 8011)
    assert local.max_model_len is None  # derived from the prompt budgets when started
    assert load_settings(environ={"HEADSTART_BACKEND_MODE": "local"}).backend.mode == "local"
    with pytest.raises(SettingsError) as error:
        load_settings(
            {"backend": {"mode": "gpu", "local": {"gpuMemoryUtilization": 1.5}}}, environ={}
        )
    assert "backend.mode" in str(error.value)
    assert "backend.local.gpuMemoryUtilization" in str(error.value)
