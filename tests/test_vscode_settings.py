"""The VS Code extension's settings (clients/vscode/package.json) against the server's.

The extension sends every `headstart.*` setting that is not its own to the server, whose
pydantic model rejects unknown keys: so a server setting added, renamed or re-ranged
without the extension following would break it. These checks stop that drift, and make
sure every setting and command is described for the user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT

from server.config import Settings, is_machine_setting

PACKAGE = json.loads((ROOT / "clients" / "vscode" / "package.json").read_text())
CATEGORIES: list[dict[str, Any]] = PACKAGE["contributes"]["configuration"]
PROPERTIES: dict[str, dict[str, Any]] = {
    key: prop for category in CATEGORIES for key, prop in category["properties"].items()
}
CLIENT_ONLY = {
    "headstart.enable",
    "headstart.server.command",
    "headstart.server.pythonPath",
    "headstart.server.env",
    "headstart.trace.server",
}
"""Read by the extension alone (clients/vscode/src/settings.ts: CLIENT_ONLY)."""
SCHEMA = Settings.model_json_schema(by_alias=True)
DEFAULTS = Settings().model_dump(by_alias=True, mode="json")


def leaves(schema: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, dict]]:
    """(dotted camelCase key, JSON schema) of every leaf setting of the server's model."""
    for name, prop in schema["properties"].items():
        ref = prop.get("$ref")
        if ref is not None:
            yield from leaves(SCHEMA["$defs"][ref.rsplit("/", 1)[1]], (*path, name))
        else:
            yield ".".join((*path, name)), prop


SERVER = dict(leaves(SCHEMA))


def default_of(key: str) -> Any:
    value: Any = DEFAULTS
    for part in key.split("."):
        value = value[part]
    return value


def test_every_server_setting_is_contributed_and_nothing_else() -> None:
    contributed = {key.removeprefix("headstart.") for key in PROPERTIES if key not in CLIENT_ONLY}
    missing, extra = set(SERVER) - contributed, contributed - set(SERVER)
    assert not missing and not extra, (
        f"clients/vscode/package.json: add headstart.{sorted(missing)}, remove {sorted(extra)}"
    )
    assert all(key.startswith("headstart.") for key in PROPERTIES)


@pytest.mark.parametrize("key", sorted(SERVER))
def test_a_contributed_setting_has_the_servers_type_default_and_range(key: str) -> None:
    server, vscode = SERVER[key], PROPERTIES[f"headstart.{key}"]
    if "anyOf" in server:
        types = [option["type"] for option in server["anyOf"]]
        assert vscode["type"] == types, key
    else:
        assert vscode["type"] == server["type"], key
    assert vscode["default"] == default_of(key)
    assert vscode.get("minimum") == server.get("minimum")
    assert vscode.get("maximum") == server.get("maximum")
    if "enum" in server:
        assert vscode["enum"] == server["enum"]
    if "pattern" in server:
        choices = re.fullmatch(r"\^\(([\w|]+)\)\$", server["pattern"])
        if choices:  # a choice written as a pattern (log.level): an enum in the editor
            assert vscode["enum"] == choices.group(1).split("|")
    if server.get("type") == "object":
        assert vscode["additionalProperties"] == server["additionalProperties"]


@pytest.mark.parametrize("key", sorted(PROPERTIES))
def test_every_setting_is_described(key: str) -> None:
    prop = PROPERTIES[key]
    description = prop.get("markdownDescription") or prop.get("description") or ""
    assert len(description) > 20, key


def test_every_server_setting_is_in_the_settings_reference() -> None:
    readme = (ROOT / "docs" / "settings.md").read_text()
    for key in SERVER:
        assert f"| `{key}` |" in readme, key
    for key in CLIENT_ONLY:
        assert f"`{key}`" in readme, key


def test_every_contributed_command_is_registered_and_titled() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "clients" / "vscode" / "src").glob("*.ts"))
    registered = set(re.findall(r'command\("(headstart\.\w+)"', source))
    contributed = {command["command"] for command in PACKAGE["contributes"]["commands"]}
    assert contributed == registered
    assert all(
        command["title"] and command["category"] == "Headstart"
        for command in PACKAGE["contributes"]["commands"]
    )


def test_settings_a_repository_must_not_choose_are_machine_settings_and_restricted() -> None:
    """Where the key goes, which variable holds it, what runs and where files are written:
    VS Code takes these from the user's (or the remote's) settings alone, and lists them
    for Restricted Mode; the server takes them from initializationOptions alone."""
    machine = {key for key, prop in PROPERTIES.items() if prop.get("scope") == "machine"}
    expected = {f"headstart.{key}" for key in SERVER if is_machine_setting(key)}
    expected |= {key for key in CLIENT_ONLY if key.startswith("headstart.server.")}
    assert machine == expected
    restricted = PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert sorted(restricted) == sorted(machine)


def test_settings_are_grouped_in_ordered_categories() -> None:
    """The Settings editor shows one category per part of Headstart, in a fixed order, and
    each setting at a distinct place inside its category."""
    assert [category["order"] for category in CATEGORIES] == list(range(len(CATEGORIES)))
    for category in CATEGORIES:
        assert category["title"] and category["id"].startswith("headstart.")
        orders = [prop["order"] for prop in category["properties"].values()]
        assert sorted(orders) == list(range(len(orders))), category["title"]
    keys = [key for category in CATEGORIES for key in category["properties"]]
    assert len(keys) == len(set(keys))
