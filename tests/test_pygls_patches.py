"""The pygls that is installed is one the patches of server/lsp are tested on, and every
private part of pygls they patch is still there; a pygls that does not fit stops
`headstart serve` at start with a message naming each problem."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pygls.lsp.server import LanguageServer

from server.lsp import pygls_patches


def pinned(name: str) -> SpecifierSet:
    """The specifier pyproject.toml gives the project's dependency `name`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"]:
        requirement = Requirement(text)
        if requirement.name == name:
            return requirement.specifier
    raise AssertionError(f"pyproject.toml does not depend on {name}")


def test_pyproject_pins_the_tested_pygls_and_it_is_installed() -> None:
    assert pinned("pygls") == SpecifierSet(pygls_patches.TESTED_PYGLS), (
        "pyproject.toml's pygls pin and server/lsp/pygls_patches.py's TESTED_PYGLS differ: "
        "change them together"
    )
    installed = pygls_patches.installed_pygls()
    assert pygls_patches.tested(installed), (
        f"pygls {installed} is installed; the patches of server/lsp are tested on "
        f"{pygls_patches.TESTED_PYGLS} (docs/architecture.md, 'pygls patches')"
    )


@pytest.mark.parametrize(
    "version", ["2.0.1", "2.1", "2.1.0", "2.1.1", "2.1.9", "2.2.0", "2.2.0rc1", "3.0.0", "x"]
)
def test_tested_reads_the_range_as_packaging_does(version: str) -> None:
    specifier = SpecifierSet(pygls_patches.TESTED_PYGLS)
    expected = version != "x" and Version(version) in specifier
    assert pygls_patches.tested(version) == expected


def test_every_patched_part_of_pygls_is_there() -> None:
    found = pygls_patches.problems(LanguageServer("probe", "0"))
    assert found == [], "pygls changed under the patches of server/lsp: " + "; ".join(found)


def test_a_missing_part_and_another_version_are_both_named() -> None:
    server = LanguageServer("probe", "0")
    del server._stop_event
    found = pygls_patches.problems(server, version="3.0.0")
    assert found == [
        "pygls 3.0.0 is installed, the patches are tested on >=2.1.0,<2.2",
        "server._stop_event (server/lsp/stdio.py: shutdown() stops our reader) is gone",
    ]


UNFIT_PYGLS = textwrap.dedent(
    """
    import sys
    from importlib import metadata
    from pygls.protocol import JsonRPCProtocol

    real_version = metadata.version
    metadata.version = lambda name: "2.9.0" if name == "pygls" else real_version(name)
    del JsonRPCProtocol._handle_cancel_notification

    def _execute_handler(self, msg_id, handler, callback):
        pass

    JsonRPCProtocol._execute_handler = _execute_handler
    from server.cli import main

    sys.exit(main(["serve"]))
    """
)


def test_serve_stops_at_start_on_a_pygls_that_does_not_fit() -> None:
    """The real `headstart serve`, on a pygls made to look like a newer one."""
    result = subprocess.run(
        [sys.executable, "-c", UNFIT_PYGLS],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("server.lsp.pygls_patches.UntestedPygls: Headstart patches"), last
    assert "pygls 2.9.0 is installed, the patches are tested on >=2.1.0,<2.2" in last
    assert "pygls.protocol.JsonRPCProtocol._handle_cancel_notification" in last
    assert "is gone" in last
    assert "_execute_handler (server/lsp/protocol.py" in last
    assert "takes ('self', 'msg_id', 'handler', 'callback')" in last
    assert 'Install "pygls>=2.1.0,<2.2"' in last
