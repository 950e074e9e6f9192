"""What `headstart demo` serves and says: a real small code model where the Hugging Face
cache or Hub has it, random weights (and why) where neither does, and why the CPU build's
latencies are not the README's GPU figures.

The Hub is never contacted: its stand-in is a closed local port, and the cache is a
folder laid out as huggingface_hub writes it. Each lookup runs in a process of its own,
since huggingface_hub reads HF_HUB_CACHE when it is imported.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from conftest import server_env

from server.backend.local_vllm import DEMO_MODEL, ModelSource
from server.demo import cpu_latency_note, model_note


def closed_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def demo_model_in_process(hub_cache: Path, endpoint: str) -> dict[str, str | None]:
    code = (
        "import json, sys; from server.backend.local_vllm import demo_model;"
        "found = demo_model(endpoint=sys.argv[1]);"
        "print(json.dumps({'folder': found.folder and str(found.folder),"
        " 'name': found.name, 'why': found.why}))"
    )
    env = server_env(HF_HUB_CACHE=str(hub_cache))
    env.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run(
        [sys.executable, "-c", code, endpoint], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, str | None] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_the_model_in_the_hugging_face_cache_is_served(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / ("models--" + DEMO_MODEL.replace("/", "--"))
    snapshot = repo / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        (snapshot / name).write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abc")
    found = demo_model_in_process(tmp_path / "hub", closed_endpoint())
    assert found == {
        "folder": str(snapshot),
        "name": DEMO_MODEL,
        "why": "from the Hugging Face cache on this machine",
    }


def test_without_the_cache_or_the_hub_it_says_why_random_weights(tmp_path: Path) -> None:
    endpoint = closed_endpoint()
    found = demo_model_in_process(tmp_path / "empty-hub", endpoint)
    assert found["folder"] is None and found["name"] == DEMO_MODEL
    why = str(found["why"])
    assert why.startswith(f"the Hugging Face Hub ({endpoint}) cannot be reached from this machine")
    note = " ".join(model_note(ModelSource(None, DEMO_MODEL, why)).split())
    assert "no model weights are on this machine" not in note
    assert "No model was given (--model or HEADSTART_MODEL)" in note
    assert f"{DEMO_MODEL} is not in the Hugging Face cache here; {why}" in note
    assert "NOISE" in note


def test_a_real_model_is_named_with_where_it_came_from(tmp_path: Path) -> None:
    note = model_note(ModelSource(tmp_path, DEMO_MODEL, "downloaded from the Hugging Face Hub"))
    assert note.startswith(f"Model: {DEMO_MODEL}, downloaded from the Hugging Face Hub: real")


def test_the_cpu_latency_note_says_why_it_differs_from_the_gpu_figures() -> None:
    note = " ".join(cpu_latency_note(dummy_weights=True).split())
    assert "CPU build computes every token" in note
    assert "4.7 ms (p50) and 117 ms (p99)" in note and "H200" in note
    assert "so every key waits for the model" in note
    assert "answered from the server's cache" in cpu_latency_note(dummy_weights=False)


def test_a_model_that_is_not_a_folder_is_refused_with_what_to_give(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "server", "demo", "--model", str(tmp_path / "missing")],
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "is not a folder on this machine: give the folder of a downloaded model" in done.stderr
