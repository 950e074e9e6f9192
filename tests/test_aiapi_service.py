"""`headstart aiapi serve` over HTTP: the real service as a subprocess on a free port, with
real keys made by `headstart aiapi key`, real worker processes and the real generators.

Two services: one with roomy limits (documents end to end, errors, keys, users, the
client it generates for itself) and one with tight limits (a full queue, a timeout, expiry).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ROOT, server_env

FIXTURES = ROOT / "tests" / "fixtures" / "openapi"
PETSTORE = FIXTURES / "petstore.yaml"
TOOLS = ROOT / ".tools"
PRISM = TOOLS / "aiapi-mock" / "node_modules" / ".bin" / "prism"
TIGHT_TIMEOUT_S = 1.5
TIGHT_TTL_S = 3.0


def headstart(*args: str | Path, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server", *map(str, args)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
        **kwargs,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Service:
    url: str
    data_dir: Path
    process: subprocess.Popen[str]

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A keys file made by `headstart aiapi key`, and each user's key (printed once)."""
    keys_file = tmp_path_factory.mktemp("keys") / "keys"
    users = {}
    for user in ("alice", "bob"):
        made = headstart("aiapi", "key", user, "--keys-file", keys_file)
        assert made.returncode == 0, made.stderr
        users[user] = made.stdout.strip()
    stored = keys_file.read_text()
    assert all(key not in stored for key in users.values())  # digests only, at rest
    assert stored.startswith("alice:sha256:")
    assert keys_file.stat().st_mode & 0o077 == 0
    return keys_file, users


def start_service(keys_file: Path, data_dir: Path, **settings: str) -> Iterator[Service]:
    port = free_port()
    env = server_env(**{f"HEADSTART_AIAPI_{k.upper()}": v for k, v in settings.items()})
    log = data_dir.with_name(data_dir.name + ".log")
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "server", "aiapi", "serve", "--port", str(port),
             "--keys-file", str(keys_file), "--data-dir", str(data_dir), "--log-level", "warning"],
            env=env, stdout=output, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"the service exited ({process.returncode}):\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/openapi.json", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the service did not answer within 60 s"
        time.sleep(0.1)
    try:
        yield Service(url, data_dir, process)
    finally:
        process.terminate()
        assert process.wait(timeout=30) in (0, -15)  # uvicorn re-raises the SIGTERM it handled
    assert list((data_dir / "jobs").iterdir()) == []  # stopping removes every job's files


@pytest.fixture(scope="module")
def service(
    keys: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    yield from start_service(keys[0], tmp_path_factory.mktemp("service"), max_body_bytes="65536")


@pytest.fixture(scope="module")
def tight(
    keys: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    yield from start_service(
        keys[0],
        tmp_path_factory.mktemp("tight"),
        max_running_per_key="1",
        max_queued_per_key="1",
        job_timeout_s=str(TIGHT_TIMEOUT_S),
        kill_grace_s="2",
        result_ttl_s=str(TIGHT_TTL_S),
    )


def submit(client: httpx.Client, document: Path, **params: Any) -> str:
    answer = client.post(
        "/v1/generate",
        params={"languages": "python", **params},
        content=document.read_bytes(),
        headers={"Content-Type": "application/yaml"},
    )
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    assert answer.headers["Location"] == f"/v1/jobs/{job_id}"
    return job_id


def finished(client: httpx.Client, job_id: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(f"/v1/jobs/{job_id}")
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()
        if job["status"] in ("completed", "failed"):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def extract(archive: bytes, folder: Path) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(archive)) as bundle:
        bundle.extractall(folder)
        return bundle.namelist()


def broken_petstore(tmp_path: Path) -> tuple[Path, int]:
    """The petstore with `in: query` misspelt, and that line's number."""
    lines = PETSTORE.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.strip() == "in: query")
    lines[number - 1] = lines[number - 1].replace("in: query", "in: querry")
    broken = tmp_path / "broken.yaml"
    broken.write_text("".join(lines))
    return broken, number


def test_uploaded_document_becomes_a_zip_whose_python_client_imports(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    with service.client(keys[1]["alice"]) as alice:
        answer = alice.post(
            "/v1/generate",
            params={"languages": "python"},
            files={"document": ("petstore.yaml", PETSTORE.read_bytes(), "application/yaml")},
        )
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["job_id"]
        job = finished(alice, job_id)
        assert job["status"] == "completed", job
        assert [r["language"] for r in job["results"]] == ["python"]
        assert job["result_url"] == f"/v1/jobs/{job_id}/result"
        assert job["expires_at"] > job["finished_at"]
        zipped = alice.get(job["result_url"])
    assert zipped.status_code == 200
    assert zipped.headers["content-type"] == "application/zip"
    names = extract(zipped.content, tmp_path / "unzipped")
    assert {"README.md", "verify.py", "python/swagger_petstore_client/client.py"} <= set(names)
    readme = (tmp_path / "unzipped" / "README.md").read_text()
    assert readme.startswith("# Swagger Petstore 1.0.0: generated code")
    assert "from `petstore.yaml`" in readme and "python3 verify.py" in readme
    client = tmp_path / "unzipped" / "python" / "swagger_petstore_client" / "client.py"
    assert "from petstore.yaml" in client.read_text()  # the upload's name, not ours
    imported = subprocess.run(
        [sys.executable, "-c", "from swagger_petstore_client import AsyncClient, Client; "
         "print(sorted(m for m in dir(Client) if not m.startswith('_')))"],
        cwd=tmp_path / "unzipped" / "python", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert "list_pets" in imported.stdout


def test_broken_document_fails_with_the_line_of_its_problem(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    broken, line = broken_petstore(tmp_path)
    with service.client(keys[1]["alice"]) as alice:
        job_id = submit(alice, broken)
        job = finished(alice, job_id)
        assert job["status"] == "failed"
        assert job["error"] == "openapi.yaml: not a valid OpenAPI 3.x document (1 problem)"
        (problem,) = job["problems"]
        assert problem["line"] == line
        assert problem["pointer"] == "/paths/~1pets/get/parameters/0/in"
        assert problem["text"].startswith(f"openapi.yaml:{line}: #/paths/~1pets/get/")
        assert "'querry' is not one of" in problem["message"]
        assert job["result_url"] is None
        assert alice.get(f"/v1/jobs/{job_id}/result").status_code == 404


def test_reference_outside_the_document_is_refused_unread(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """A `$ref` to the server's files (or a URL) would be followed by every tool."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "object", "description": "s3cret-of-the-server"}')
    lines = PETSTORE.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if "$ref" in line)
    indent = lines[number - 1][: lines[number - 1].index("$ref")]
    lines[number - 1] = f'{indent}$ref: "{secret.as_uri()}"\n'
    document = tmp_path / "outside.yaml"
    document.write_text("".join(lines))
    with service.client(keys[1]["alice"]) as alice:
        answer = alice.get(f"/v1/jobs/{submit(alice, document)}")
        job = finished(alice, answer.json()["job_id"])
    assert job["status"] == "failed"
    assert job["error"] == "openapi.yaml: not self-contained (1 problem)"
    (problem,) = job["problems"]
    assert problem["line"] == number
    assert problem["message"].startswith(f"$ref '{secret.as_uri()}' points outside the document")
    assert "s3cret-of-the-server" not in json.dumps(job)


def test_missing_or_bad_key_gets_401(service: Service, keys: tuple[Path, dict[str, str]]) -> None:
    with service.client(keys[1]["alice"]) as alice:
        job_id = submit(alice, PETSTORE)
    for key in (None, "hsk_not-a-key", keys[1]["alice"][:-1]):
        with service.client(key) as stranger:
            for answer in (
                stranger.post("/v1/generate", content=PETSTORE.read_bytes()),
                stranger.get(f"/v1/jobs/{job_id}"),
                stranger.get(f"/v1/jobs/{job_id}/result"),
            ):
                assert answer.status_code == 401, (key, answer.text)
                assert answer.headers["WWW-Authenticate"] == "Bearer"
                assert answer.json() == {"detail": "a valid API key is needed"}
    basic = httpx.get(f"{service.url}/v1/jobs/{job_id}", auth=("alice", keys[1]["alice"]))
    assert basic.status_code == 401


def test_another_users_job_is_404(service: Service, keys: tuple[Path, dict[str, str]]) -> None:
    with service.client(keys[1]["alice"]) as alice, service.client(keys[1]["bob"]) as bob:
        job_id = submit(alice, PETSTORE)
        assert alice.get(f"/v1/jobs/{job_id}").status_code == 200
        assert alice.get(f"/v1/jobs/{job_id}/result").status_code == 409  # not finished yet
        mine, unknown = bob.get(f"/v1/jobs/{job_id}"), bob.get(f"/v1/jobs/{'0' * 32}")
        assert mine.status_code == unknown.status_code == 404
        assert mine.json() == unknown.json()  # nothing tells that the job exists
        assert bob.get(f"/v1/jobs/{job_id}/result").status_code == 404


def test_bad_requests_are_refused_with_their_reason(
    service: Service, keys: tuple[Path, dict[str, str]]
) -> None:
    with service.client(keys[1]["alice"]) as alice:
        too_big = alice.post("/v1/generate", content=b"#" * 70_000)
        assert too_big.status_code == 413
        assert "65536 bytes" in too_big.json()["detail"]
        empty = alice.post("/v1/generate", content=b"  \n")
        assert empty.status_code == 400
        unknown = alice.post(
            "/v1/generate", params={"languages": "python,cobol"}, content=PETSTORE.read_bytes()
        )
        assert unknown.status_code == 422
        assert "unknown language cobol" in unknown.json()["detail"]


def test_react_query_job_zips_the_hooks_and_says_how_to_use_them(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    with service.client(keys[1]["alice"]) as alice:
        job_id = submit(alice, PETSTORE, languages="typescript", react_query="true")
        job = finished(alice, job_id)
        assert job["status"] == "completed", job
        assert job["react_query"] is True
        names = extract(alice.get(job["result_url"]).content, tmp_path / "unzipped")
        without_typescript = alice.post(
            "/v1/generate",
            files={"document": ("petstore.yaml", PETSTORE.read_bytes(), "application/yaml")},
            data={"languages": "python", "react_query": "true"},
        )
    assert {"typescript/src/@tanstack/react-query.gen.ts", "typescript/README.md"} <= set(names)
    package = json.loads((tmp_path / "unzipped" / "typescript" / "package.json").read_text())
    assert "@tanstack/react-query" in package["dependencies"]
    readme = (tmp_path / "unzipped" / "README.md").read_text()
    assert "## Use (TypeScript, React Query)" in readme
    assert "`typescript/src/@tanstack/react-query.gen.ts`" in readme
    assert without_typescript.status_code == 422
    assert "add typescript to languages" in without_typescript.json()["detail"]


def test_the_service_generates_its_own_client(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """/openapi.json through `headstart aiapi generate`, and that client drives a job."""
    description = httpx.get(f"{service.url}/openapi.json").json()
    assert set(description["paths"]) == {
        "/v1/generate", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/result"
    }  # fmt: skip
    assert description["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    spec = tmp_path / "headstart-service.json"
    spec.write_text(httpx.get(f"{service.url}/openapi.json").text)
    made = headstart("aiapi", "generate", spec, "--lang", "python", "--out", tmp_path / "out")
    assert made.returncode == 0, made.stderr
    monkeypatch.syspath_prepend(str(tmp_path / "out" / "python"))
    from headstart_api_contracts_client import Client  # type: ignore[import-not-found]

    document = (FIXTURES / "nasa_apod.json").read_text()
    headers = {"Authorization": f"Bearer {keys[1]['bob']}"}
    with Client(service.url, headers=headers) as api:
        created = api.generate(json.loads(document), languages=["python", "go"])
        deadline = time.monotonic() + 120
        while (job := api.get_job(created.job_id)).status.value not in ("completed", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert job.status.value == "completed", job.error
        names = extract(api.get_result(created.job_id), tmp_path / "apod")
    assert "go/client.go" in names and "README.md" in names
    assert any(name.startswith("python/") for name in names)


@pytest.mark.skipif(not PRISM.exists(), reason="Prism missing: bash server/aiapi/install_tools.sh")
def test_verified_job_and_its_local_verify_script_pass(
    service: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    with service.client(keys[1]["bob"]) as bob:
        job_id = submit(bob, PETSTORE, verify="true")
        job = finished(bob, job_id)
        assert job["status"] == "completed", job
        (python,) = job["results"]
        assert python["check"]["checker"] == "mypy --strict" and python["check"]["ok"]
        assert python["contract"]["ok"]
        extract(bob.get(job["result_url"]).content, tmp_path / "unzipped")
    readme = (tmp_path / "unzipped" / "README.md").read_text()
    assert "- python: mypy --strict passed" in readme
    assert "- python: contract tests against Prism passed" in readme
    env = {**os.environ, "MYPY_CACHE_DIR": str(TOOLS / "aiapi-mypy-cache")}
    verified = subprocess.run(
        [sys.executable, "verify.py"], cwd=tmp_path / "unzipped", capture_output=True,
        text=True, timeout=300, env=env,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.rstrip().endswith("python: passed")


def test_full_queue_gets_429_with_retry_after(
    tight: Service, keys: tuple[Path, dict[str, str]]
) -> None:
    """One running and one waiting per key; a third waits for nobody: 429. Other keys go on."""
    with tight.client(keys[1]["alice"]) as alice, tight.client(keys[1]["bob"]) as bob:
        first = submit(alice, PETSTORE, verify="true")
        second = submit(alice, PETSTORE, verify="true")
        refused = alice.post("/v1/generate", content=PETSTORE.read_bytes())
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        assert "queue is full" in refused.json()["detail"]
        assert alice.get(f"/v1/jobs/{second}").json()["status"] == "queued"
        bobs = submit(bob, PETSTORE)
        for client, job_id in ((alice, first), (alice, second), (bob, bobs)):
            finished(client, job_id)
        assert alice.post("/v1/generate", content=PETSTORE.read_bytes()).status_code == 202


def processes_of(folder: Path) -> list[str]:
    """Command lines of live processes that run in `folder` or name it (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (str(folder) in command or cwd.startswith(str(folder))):
            found.append(command)
    return found


def test_job_over_its_time_fails_and_its_processes_end(
    tight: Service, keys: tuple[Path, dict[str, str]]
) -> None:
    with tight.client(keys[1]["bob"]) as bob:
        job_id = submit(bob, PETSTORE, verify="true")
        job = finished(bob, job_id, timeout=60)
        assert job["status"] == "failed"
        assert job["error"] == f"timed out after {TIGHT_TIMEOUT_S:g} s"
        assert job["result_url"] is None
    if sys.platform == "linux":
        # SIGKILL went to the worker's whole group; a killed process in the middle of I/O
        # takes a moment to go, longer on a loaded machine
        deadline = time.monotonic() + 10
        while (left := processes_of(tight.data_dir / "jobs" / job_id)) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.1)
        assert left == []


def test_finished_jobs_and_their_files_go_after_the_ttl(
    tight: Service, keys: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    broken, _ = broken_petstore(tmp_path)
    with tight.client(keys[1]["bob"]) as bob:
        job_id = submit(bob, broken)
        job = finished(bob, job_id, timeout=60)
        assert job["status"] == "failed"
        assert (tight.data_dir / "jobs" / job_id).is_dir()
        deadline = time.monotonic() + TIGHT_TTL_S + 10
        while bob.get(f"/v1/jobs/{job_id}").status_code == 200:
            assert time.monotonic() < deadline, "the job outlived its TTL"
            time.sleep(0.2)
        assert bob.get(f"/v1/jobs/{job_id}").status_code == 404
    assert not (tight.data_dir / "jobs" / job_id).exists()
