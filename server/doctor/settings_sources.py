"""The settings in effect for the doctor, and where each came from: a default, a HEADSTART_*
variable, or the --settings object (what an editor sends as initializationOptions)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from server.config import ENV_OVERRIDES, Settings, SettingsError, load_settings
from server.doctor.report import Check

ALWAYS_SHOWN = (
    "backend.mode",
    "backend.url",
    "backend.model",
    "backend.apiKeyEnv",
    "completion.tokenizer",
    "cacheDir",
)
"""Settings shown even at their defaults: where code and keys go, and what is read."""


def load_with_sources(options: Mapping[str, Any]) -> tuple[Settings | None, list[Check]]:
    """The settings as the server would have them with `options` as initializationOptions,
    and a check that lists them; None and a FAIL when they do not validate."""
    try:
        settings = load_settings(options)
    except SettingsError as exc:
        return None, [
            Check(
                "settings",
                "FAIL",
                str(exc),
                fix="correct those values (HEADSTART_* variables, the editor's settings or "
                "--settings); docs/settings.md describes each",
            )
        ]
    values = _flatten(settings.model_dump(by_alias=True, mode="json"))
    defaults = _flatten(Settings.model_validate({}).model_dump(by_alias=True, mode="json"))
    given = _flatten(dict(options))
    from_env = {
        ".".join(path): variable
        for variable, path in ENV_OVERRIDES.items()
        if os.environ.get(variable)
    }
    lines = []
    for key, value in values.items():
        source = from_env.get(key) or ("--settings" if key in given else None)
        if source is None and key not in ALWAYS_SHOWN and value == defaults.get(key):
            continue
        lines.append(f"{key} = {value!r}  ({source or 'default'})")
    key_env = settings.backend.api_key_env
    key_state = "set" if settings.api_key() else "not set (fine for a backend that wants none)"
    lines.append(f"API key: ${key_env} is {key_state}")
    summary = (
        "valid (in an editor, its settings take the place of --settings; HEADSTART_* "
        "variables still win)"
    )
    return settings, [Check("settings", "OK", summary, details=tuple(lines))]


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted keys to leaf values; a dict-valued setting (completion.languages) is a leaf
    only where the model has no sections below it."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted != "completion.languages":
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat
