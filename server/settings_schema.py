"""Headstart's settings as a JSON schema, generated from the one pydantic model.

Editors check and complete a settings file with it while it is edited: LSP4IJ shows
clients/jetbrains/template/settings.schema.json in its Configuration tab. The file is
generated, never written by hand, so it cannot drift from server.config; a test compares
the committed copy with this module's output. Regenerate it with

    python -m server.settings_schema clients/jetbrains/template/settings.schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from server.config import SECTION, Settings

JsonObject = dict[str, Any]


def settings_schema() -> JsonObject:
    """The `Settings` model as one self-contained schema with the camelCase keys.

    References are inlined (draft-07 readers need no `$defs`), pydantic's generated titles
    ("Apikeyenv") are dropped, and every setting carries its default, including those
    pydantic leaves out because they come from a factory.
    """
    schema = Settings.model_json_schema(by_alias=True, mode="validation")
    definitions = schema.pop("$defs", {})
    inlined: JsonObject = _inline(schema, definitions)
    _add_defaults(inlined, Settings.model_validate({}).model_dump(by_alias=True, mode="json"))
    return inlined


def section_schema() -> JsonObject:
    """A settings file holding the `headstart` section, as LSP4IJ's settings.json does:
    it answers workspace/configuration for a section by looking that key up."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "LSP4IJ/headstart/settings.schema.json",
        "title": "Headstart settings",
        "description": (
            f"The {SECTION!r} section: Headstart's settings (docs/settings.md). "
            "Generated from server/config.py by server/settings_schema.py."
        ),
        "type": "object",
        "additionalProperties": False,
        "properties": {SECTION: settings_schema()},
    }


def _inline(node: Any, definitions: JsonObject) -> Any:
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = definitions[node["$ref"].rsplit("/", 1)[-1]]
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return _inline({**target, **siblings}, definitions)
    inlined: JsonObject = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":  # its keys are setting names, not schema keywords
            inlined[key] = {name: _inline(prop, definitions) for name, prop in value.items()}
        else:
            inlined[key] = _inline(value, definitions)
    return inlined


def _add_defaults(schema: JsonObject, defaults: JsonObject) -> None:
    for name, prop in schema.get("properties", {}).items():
        if "properties" in prop:
            _add_defaults(prop, defaults[name])
        elif "default" not in prop:
            prop["default"] = defaults[name]


def render(schema: JsonObject) -> str:
    """The file's exact text: two-space indents, keys in the model's order, final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render(section_schema())
    if not args:
        sys.stdout.write(text)
        return 0
    Path(args[0]).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
