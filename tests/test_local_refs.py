"""The `$ref` policy (server.aiapi.local_refs) on the ways out of a folder that a resolver
would take: `..`, a symbolic link, percent-encoding, an escaped key, a file reached
through another, and URLs of every scheme. The LSP and CLI tests drive it end to end;
these pin the cases too fiddly to set up there."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from server.aiapi.local_refs import (
    MAX_FILES,
    SELF_CONTAINED,
    ReferencePolicy,
    outside_references,
    refused_problems,
    refused_references,
    workspace_policy,
)

HEAD = 'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths: {}\ncomponents:\n  schemas:\n'


def document(folder: Path, *refs: str, name: str = "api.yaml") -> Path:
    """A document in `folder` whose schemas S0, S1... are each one of `refs`."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'    S{i}: {{$ref: "{ref}"}}\n' for i, ref in enumerate(refs)]
    path = folder / name
    path.write_text(HEAD + "".join(lines))
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "id_rsa").write_text("Key: {type: string}\n")
    (tmp_path / "ws" / "schemas").mkdir(parents=True)
    (tmp_path / "ws" / "schemas" / "pet.yaml").write_text("Pet: {type: object}\n")
    return tmp_path / "ws"


def targets(path: Path, policy: ReferencePolicy) -> list[str]:
    return [reference.target for reference in refused_references(path, policy)]


@pytest.mark.parametrize(
    "ref",
    [
        "https://attacker.example/x.yaml",
        "http://127.0.0.1:9/x.yaml",
        "file:///home/u/.aws/credentials",
        "FILE:///etc/passwd",
        "//attacker.example/x.yaml",
        "ftp://attacker.example/x.yaml",
        "jar:file:///x.jar!/a.yaml",
    ],
)
def test_urls_of_any_scheme_are_refused(workspace: Path, ref: str) -> None:
    path = document(workspace, ref)
    (refused,) = refused_references(path, workspace_policy(workspace))
    assert refused.target == ref and "it is a URL" in refused.reason


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("../home/id_rsa", "resolves outside"),
        ("schemas/../../home/id_rsa", "resolves outside"),
        ("%2e%2e/home/id_rsa", "resolves outside"),
        ("/etc/passwd", "absolute path"),
        ("schemas/link/id_rsa", "resolves outside"),  # a link inside that leads out
    ],
)
def test_paths_that_leave_the_folder_are_refused(workspace: Path, ref: str, why: str) -> None:
    (workspace / "schemas" / "link").symlink_to(workspace.parent / "home")
    path = document(workspace, ref)
    (refused,) = refused_references(path, workspace_policy(workspace))
    assert refused.target == ref and why in refused.reason


def test_relative_refs_inside_are_followed_and_their_files_checked(workspace: Path) -> None:
    path = document(workspace, "#/components/schemas/S1", "schemas/pet.yaml#/Pet", "")
    assert refused_references(path, workspace_policy(workspace)) == []
    (workspace / "schemas" / "pet.yaml").write_text(
        'Pet:\n  type: object\n  properties:\n    key: {$ref: "../../home/id_rsa"}\n'
    )
    problems = refused_problems(path, workspace_policy(workspace))
    (problem,) = problems
    assert problem.line == 7  # the document's $ref that leads to pet.yaml
    assert problem.message.startswith("schemas/pet.yaml:4: $ref '../../home/id_rsa' is refused")


def test_an_escaped_key_a_loop_of_anchors_and_a_dynamic_ref_are_seen(workspace: Path) -> None:
    path = workspace / "escaped.json"
    path.write_text('{"openapi": "3.1.0", "x": {"\\u0024ref": "../home/id_rsa"}}')
    assert targets(path, workspace_policy(workspace)) == ["../home/id_rsa"]
    looped = workspace / "looped.yaml"
    looped.write_text(
        "openapi: 3.1.0\na: &loop\n  self: *loop\n  b: {$dynamicRef: 'https://x.example/s'}\n"
    )
    assert targets(looped, workspace_policy(workspace)) == ["https://x.example/s"]


def test_outside_every_folder_only_refs_inside_the_document(workspace: Path) -> None:
    path = document(workspace, "#/components/schemas/S1", "schemas/pet.yaml#/Pet")
    (refused,) = refused_references(path, workspace_policy(None))
    assert refused.target == "schemas/pet.yaml#/Pet"
    assert "outside every workspace folder" in refused.message(workspace_policy(None))
    assert [p.line for p in refused_problems(path, SELF_CONTAINED)] == [7]
    assert outside_references(path)[0].message.startswith(
        "$ref 'schemas/pet.yaml#/Pet' points outside the document: the service takes"
    )


def test_what_cannot_be_checked_is_refused(workspace: Path) -> None:
    (workspace / "schemas" / "bad.yaml").write_text("a: [unclosed\n")
    chain = [f"c{i}.yaml" for i in range(MAX_FILES + 1)]
    for here, there in itertools.pairwise(chain):
        (workspace / here).write_text(f'X: {{$ref: "{there}"}}\n')
    (workspace / chain[-1]).write_text("X: {type: string}\n")
    path = document(workspace, "schemas/bad.yaml#/a", f"{chain[0]}#/X")
    reasons = [r.reason for r in refused_references(path, workspace_policy(workspace))]
    assert len(reasons) == 2
    assert "not YAML or JSON" in reasons[0]
    assert f"more than {MAX_FILES} files" in reasons[1]


def test_a_document_that_does_not_parse_is_left_to_the_validator(workspace: Path) -> None:
    path = workspace / "broken.yaml"
    path.write_text("openapi: 3.0.0\npaths: [unclosed\n")
    assert refused_references(path, workspace_policy(workspace)) == []


def test_credentials_files_inside_the_folder_are_refused(workspace: Path) -> None:
    """A repository's document naming the user's own `.env` (gitignored, beside it) or a
    Kubernetes Secret would copy its values into generated code: refused by the name or
    the content that keeps such files out of the index."""
    (workspace / ".env").write_text("STRIPE_KEY=sk_live_0123456789abcdefghijklmn\n")
    (workspace / "deploy.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ndata: {password: aHVudGVyMg==}\n"
    )
    path = document(workspace, ".env", "deploy.yaml#/data", "schemas/pet.yaml#/Pet")
    refused = refused_references(path, workspace_policy(workspace))
    assert [r.target for r in refused] == [".env", "deploy.yaml#/data"]
    assert "credentials file (by its name)" in refused[0].reason
    assert "credentials file (a Kubernetes Secret)" in refused[1].reason
