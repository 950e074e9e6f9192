"""benchmarks/quality/contract_tasks.py, end to end on a local sdist: the document is
split by tag with every operation and the components it needs, and tasks are cut after a
call's path argument only where the server would find the operation."""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path
from types import ModuleType

from conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "quality" / "contract_tasks.py"

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Code host", "version": "1"},
    "paths": {
        "/repos/{owner}/{repo}/pulls": {
            "post": {
                "tags": ["pulls"],
                "operationId": "pulls/create",
                "x-github": {"big": "dropped"},
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/New"}}
                    }
                },
                "responses": {"201": {"description": "made", "example": {"dropped": 1}}},
            }
        },
        "/user/keys": {
            "get": {"tags": ["users"], "responses": {"200": {"description": "ok"}}},
        },
    },
    "components": {
        "schemas": {
            "New": {"type": "object", "properties": {"head": {"$ref": "#/components/schemas/Ref"}}},
            "Ref": {"type": "string"},
            "Unused": {"type": "integer"},
        }
    },
}

CLIENT = """\
import requests


class Pulls:
    def create(self, owner, repo, head):
        url = f"/repos/{owner}/{repo}/pulls"
        return self.s.request("POST", f"/repos/{owner}/{repo}/pulls", json={"head": head})

    def keys(self):
        return self.s.get("/user/keys", timeout=self.timeout)

    def other(self):
        return self.s.get("/user/settings", timeout=self.timeout)

    def closed(self):
        return self.s.get("/user/keys", )
"""


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quality_contract_tasks", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_tasks_are_cut_after_a_documented_path_argument(tmp_path: Path) -> None:
    tasks_module = load()
    (tmp_path / "pkg" / "codehost").mkdir(parents=True)
    (tmp_path / "pkg" / "codehost" / "client.py").write_text(CLIENT)
    (tmp_path / "pkg" / "tests").mkdir()
    (tmp_path / "pkg" / "tests" / "test_client.py").write_text(CLIENT)
    cache = tmp_path / "sdists"
    cache.mkdir()
    with tarfile.open(cache / "codehost-1.0.tar.gz", "w:gz") as archive:
        archive.add(tmp_path / "pkg", arcname="codehost-1.0")
    document = tmp_path / "api.json"
    document.write_text(json.dumps(DOCUMENT))
    out = tmp_path / "out"

    arguments = ["--document", str(document), "--package", "codehost==1.0", "--out", str(out)]
    assert tasks_module.main([*arguments, "--cache", str(cache)]) == 0

    repo = out / "repos" / "codehost-1.0"
    pulls = json.loads((repo / "openapi" / "pulls.json").read_text())
    assert sorted(pulls["components"]["schemas"]) == ["New", "Ref"]
    assert "x-github" not in json.dumps(pulls) and "example" not in json.dumps(pulls)
    assert list(json.loads((repo / "openapi" / "users.json").read_text())["paths"]) == [
        "/user/keys"
    ]
    tasks = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [(t["groundtruth"], t["operation"]) for t in tasks] == [
        ('json={"head": head})', "POST /repos/{owner}/{repo}/pulls"),
        ("timeout=self.timeout)", "GET /user/keys"),
    ]
    for task in tasks:
        assert task["file"] == "codehost/client.py" and task["repo_dir"] == "repos/codehost-1.0"
        assert task["prefix"] + task["groundtruth"] + task["suffix"] == CLIENT
        line = task["prefix"].split("\n")[-1]
        assert (task["cursor"]["line"], task["cursor"]["character"]) == (
            task["prefix"].count("\n"),
            len(line),
        )
