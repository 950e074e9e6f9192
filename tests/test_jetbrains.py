"""The JetBrains client: the LSP4IJ template and the plugin project in clients/jetbrains/.

The template's JSON is checked (LSP4IJ's template shape, settings against the schema, the
schema against the pydantic model it is generated from), and its command is run as LSP4IJ
runs it: the process that `programArgs` names, initialized with initializationOptions.json,
answering workspace/configuration from settings.json, with documents mapped to the
languageId its fileTypeMappings give. The fake model stands behind it.

The plugin cannot be built here (its Gradle build needs JetBrains' repositories), so only
what can be checked without them is: plugin.xml against its Kotlin class, its file
mappings against the template's, the build script against its properties.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, guarded_client, server_env
from fake_openai import FakeBackend
from lsp_helpers import cursor_at, logs, open_document, suggestion
from lsprotocol import types
from pytest_lsp import LanguageClient

from server.config import SettingsError, is_machine_setting, load_settings
from server.settings_schema import render, section_schema

TEMPLATE = ROOT / "clients" / "jetbrains" / "template"
PLUGIN = ROOT / "clients" / "jetbrains" / "plugin"

TEMPLATE_SHAPE = {
    "type": "object",
    "required": ["id", "name", "programArgs", "fileTypeMappings"],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
        "name": {"type": "string", "minLength": 1},
        "programArgs": {
            "type": "object",
            "required": ["default"],
            "properties": {"default": {"type": "string"}, "windows": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        },
        "fileTypeMappings": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["fileType", "languageId"],
                "additionalProperties": False,
                "properties": {
                    "fileType": {
                        "type": "object",
                        "required": ["patterns"],
                        "properties": {
                            "name": {"type": "string"},
                            "patterns": {
                                "type": "array",
                                "minItems": 1,
                                "items": {"type": "string", "pattern": r"^\*\.[A-Za-z0-9+]+$"},
                            },
                        },
                        "additionalProperties": False,
                    },
                    "languageId": {"type": "string", "pattern": "^[a-z]+$"},
                },
            },
        },
    },
}
"""The part of LSP4IJ's template.json format (as its bundled templates use it) ours uses."""


def load(name: str) -> Any:
    return json.loads((TEMPLATE / name).read_text(encoding="utf-8"))


def language_id(path: Path) -> str:
    """The languageId LSP4IJ sends for `path`, from the template's file name patterns."""
    for mapping in load("template.json")["fileTypeMappings"]:
        if any(fnmatch.fnmatch(path.name, p) for p in mapping["fileType"]["patterns"]):
            return str(mapping["languageId"])
    raise AssertionError(f"no fileTypeMapping for {path.name}")


def template_command() -> list[str]:
    """programArgs' default, its program resolved as the IDE's PATH would: here, the
    `headstart` console script that `pip install` put next to this Python."""
    program, *args = shlex.split(load("template.json")["programArgs"]["default"])
    scripts = Path(sys.executable).parent
    found = shutil.which(program, path=str(scripts)) or shutil.which(program)
    assert found, f"{program!r} is not installed next to {sys.executable} nor on PATH"
    return [found, *args]


def test_template_json_has_lsp4ij_template_shape() -> None:
    template = load("template.json")
    jsonschema.validate(template, TEMPLATE_SHAPE)
    assert template["id"] == "headstart"
    patterns = [p for m in template["fileTypeMappings"] for p in m["fileType"]["patterns"]]
    assert len(patterns) == len(set(patterns)), "a file pattern mapped twice"
    assert shlex.split(template["programArgs"]["default"]) == ["headstart", "serve"]
    assert language_id(Path("main.py")) == "python"
    assert language_id(Path("app.tsx")) == "typescriptreact"


def test_the_schema_file_is_the_one_generated_from_the_settings_model() -> None:
    committed = (TEMPLATE / "settings.schema.json").read_text(encoding="utf-8")
    assert committed == render(section_schema()), (
        "settings.schema.json is stale; regenerate it with\n"
        "  python -m server.settings_schema clients/jetbrains/template/settings.schema.json"
    )


@pytest.mark.parametrize("name", ["settings.json", "initializationOptions.json"])
def test_settings_files_validate_against_the_schema_and_the_server(name: str) -> None:
    schema = load("settings.schema.json")
    jsonschema.Draft7Validator.check_schema(schema)
    settings = load(name)
    jsonschema.Draft7Validator(schema).validate(settings)
    load_settings(settings["headstart"], environ={})  # the server takes them too


def test_the_two_settings_files_agree_where_both_set_a_value() -> None:
    def leaves(node: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
        if not isinstance(node, dict):
            return {path: node}
        return {k: v for key, sub in node.items() for k, v in leaves(sub, (*path, key)).items()}

    init, settings = leaves(load("initializationOptions.json")), leaves(load("settings.json"))
    shared = init.keys() & settings.keys()
    assert {k: init[k] for k in shared} == {k: settings[k] for k in shared}


def test_the_settings_a_repository_cannot_set_are_in_the_initialization_options() -> None:
    """The server takes them from initializationOptions only (docs/settings.md): in the
    live settings.json they would be ignored."""
    init, settings = load("initializationOptions.json"), load("settings.json")
    assert init["headstart"]["backend"]["url"]
    keys = {
        ".".join(path[1:])
        for path in json_leaves(settings)
        if is_machine_setting(".".join(path[1:]))
    }
    assert not keys, f"settings.json sets {sorted(keys)}: move them to initializationOptions.json"


def json_leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(node, dict):
        return [path]
    return [leaf for key, sub in node.items() for leaf in json_leaves(sub, (*path, key))]


@pytest.mark.parametrize(
    "bad",
    [
        {"backend": {"url": "http://x/v1", "timeout": 5}},  # not a setting
        {"backend": {"url": 8000}},
        {"completion": {"maxTokens": 1.5}},
        {"completion": {"maxTokens": 0}},
        {"completion": {"template": "gpt"}},
        {"log": {"level": "verbose"}},
        {"completion": {"languages": {"python": "maybe"}}},
    ],
)
def test_the_schema_rejects_what_the_server_rejects(bad: dict[str, Any]) -> None:
    validator = jsonschema.Draft7Validator(load("settings.schema.json"))
    assert list(validator.iter_errors({"headstart": bad}))
    with pytest.raises(SettingsError):
        load_settings(bad, environ={})


def lsp4ij_capabilities(inline_completion: bool) -> types.ClientCapabilities:
    """What LSP4IJ declares that matters here; inline completion came with its LSP4J 1.0
    upgrade (redhat-developer/lsp4ij#1552), so older releases lack it."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            workspace_folders=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(),
        ),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            completion=types.CompletionClientCapabilities(
                completion_item=types.ClientCompletionItemOptions(snippet_support=True)
            ),
            inline_completion=(
                types.InlineCompletionClientCapabilities() if inline_completion else None
            ),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )


@asynccontextmanager
async def lsp4ij_session(
    workspace: Path, backend_url: str, inline_completion: bool
) -> AsyncIterator[LanguageClient]:
    """The template's server, started and initialized the way LSP4IJ does it. The backend
    URL comes in through the environment, as the server dialog's "Environment variables"
    would give it, so both JSON files are sent exactly as committed."""
    client = guarded_client()
    client.set_configuration(load("settings.json"))  # workspace/configuration answers
    await client.start_io(
        *template_command(), env=server_env(HEADSTART_BACKEND_URL=backend_url), cwd=workspace
    )
    try:
        uri = workspace.as_uri()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=lsp4ij_capabilities(inline_completion),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
                initialization_options=load("initializationOptions.json"),
            )
        )
        # LSP4IJ pushes the whole settings.json once the server has started
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=load("settings.json"))
        )
        yield client
        await client.shutdown_session()
    finally:
        process = client._server
        if process is not None and process.returncode is None:
            process.kill()
        await client.stop()


CUT_LINE = '    ship(depot, "B-█\n'


@pytest.mark.parametrize("inline_completion", [True, False], ids=["lsp4ij-inline", "lsp4ij-old"])
async def test_the_template_command_serves_a_completion(
    fake: FakeBackend, workspace: Path, inline_completion: bool
) -> None:
    """LSP4IJ with inline completion gets ghost text; older releases get the same
    suggestion as one completion item."""
    fake.script([{"match": 'ship(depot, "B-<|fim_suffix|>', "text": '200", 3)\n'}])
    main = workspace / "main.py"
    lines = main.read_text().splitlines(keepends=True)
    text, position = cursor_at("".join(lines[:11]) + CUT_LINE + "".join(lines[12:]))

    async with lsp4ij_session(workspace, fake.url, inline_completion) as client:
        assert client.capabilities is not None
        uri = open_document(client, main, text, language_id=language_id(main))
        if inline_completion:
            assert await suggestion(client, uri, position) == '200", 3)'
        else:
            result = await client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=position
                )
            )
            assert isinstance(result, types.CompletionList)
            (item,) = result.items
            assert item.text_edit is not None and item.text_edit.new_text == '200", 3)'
        log = logs(client)

    assert "started for" in log
    assert "invalid" not in log and "ignored" not in log, log
    request = fake.events()[-1]
    assert request["completed"] and request["rule_index"] == 0


LSP4IJ = "com.redhat.devtools.lsp4ij"


def test_plugin_xml_declares_the_server_on_lsp4ij_and_its_class_exists() -> None:
    plugin = ElementTree.parse(PLUGIN / "src/main/resources/META-INF/plugin.xml").getroot()
    assert LSP4IJ in [d.text for d in plugin.iter("depends")]
    (extensions,) = [e for e in plugin.iter("extensions") if e.get("defaultExtensionNs") == LSP4IJ]
    (server,) = extensions.iter("server")
    assert server.get("id") == "headstart"
    package, _, name = (server.get("factoryClass") or "").rpartition(".")
    sources = [p.read_text() for p in (PLUGIN / "src/main/kotlin").rglob("*.kt")]
    assert any(
        f"package {package}\n" in source
        and re.search(rf"^class {name}\b.*: LanguageServerFactory", source, re.M)
        for source in sources
    ), f"no Kotlin class {package}.{name} implementing LanguageServerFactory"


def test_plugin_maps_the_same_files_to_the_same_language_ids_as_the_template() -> None:
    plugin = ElementTree.parse(PLUGIN / "src/main/resources/META-INF/plugin.xml").getroot()
    mappings = list(plugin.iter("fileNamePatternMapping"))
    assert {m.get("serverId") for m in mappings} == {"headstart"}
    in_plugin = {m.get("languageId"): m.get("patterns", "").split(";") for m in mappings}
    in_template = {
        m["languageId"]: m["fileType"]["patterns"]
        for m in load("template.json")["fileTypeMappings"]
    }
    assert in_plugin == in_template


def test_every_gradle_property_the_build_reads_is_defined() -> None:
    build = (PLUGIN / "build.gradle.kts").read_text()
    read = set(re.findall(r'gradleProperty\("([^"]+)"\)', build))
    lines = (PLUGIN / "gradle.properties").read_text().splitlines()
    defined = {line.split("=", 1)[0].strip() for line in lines if "=" in line and line[0] != "#"}
    assert read and read <= defined, read - defined
    assert f'plugin("{LSP4IJ}"' in build
