"""benchmarks/gpu/stage_bundle.sh: the parts a GPU session carries, one a call, must each fit
beside the working tree and join again into exactly what was staged."""

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu" / "stage_bundle.sh"
PART_BYTES = 40_000


def staged_inputs(root: Path) -> dict[str, bytes]:
    """What stage_vllm.sh, stage_model.sh, make_model_dirs.sh and stage_eval.sh leave,
    in small: random bytes, so no part compresses away."""
    files = {
        "vllm.tar.gz": os.urandom(90_000),
        "wheels/pygls-2.1.1-py3-none-any.whl": os.urandom(30_000),
        "eval/dev.tar.xz": os.urandom(20_000),
        "models/qwen2.5-coder-1.5b/tokenizer.json": b'{"model": {}}',
        "extra/gguf-0.19.0-py3-none-any.whl": os.urandom(5_000),
    }
    for name, data in files.items():
        target = root / "stage" / name if name != "vllm.tar.gz" else root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    tools = root / "tools"
    tools.mkdir()
    for name in ("convert_gguf.py", "serve_vllm.sh"):
        (tools / name).write_text(f"# {name}\n")
        files[name] = f"# {name}\n".encode()
    (root / "weights.gguf").write_bytes(os.urandom(100_000))
    return files


def stage(root: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "VLLM_TGZ": str(root / "vllm.tar.gz"),
        "GGUF": str(root / "weights.gguf"),
        "TOOLS": str(root / "tools"),
        "PART_BYTES": str(PART_BYTES),
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(root / "stage")], env=env, capture_output=True, text=True
    )


def joined(folder: Path) -> bytes:
    return b"".join(part.read_bytes() for part in sorted(folder.iterdir()))


def test_the_parts_fit_a_call_and_join_into_what_was_staged(tmp_path: Path) -> None:
    files = staged_inputs(tmp_path)
    done = stage(tmp_path)
    assert done.returncode == 0, done.stderr

    bundle, weights = tmp_path / "stage" / "bp", tmp_path / "stage" / "gp"
    parts = sorted(bundle.iterdir()) + sorted(weights.iterdir())
    assert len(list(bundle.iterdir())) > 1 and len(list(weights.iterdir())) == 3
    assert all(part.stat().st_size <= PART_BYTES for part in parts)

    with tarfile.open(fileobj=io.BytesIO(joined(bundle))) as tar:
        unpacked = {
            member.name.removeprefix("./"): tar.extractfile(member).read()  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile()
        }
    assert unpacked == files
    assert joined(weights) == (tmp_path / "weights.gguf").read_bytes()
    # the plan: one call a part, then the device's setup with the number of weight parts
    assert done.stdout.count("carry [") == len(parts)
    assert "NG=3 bash benchmarks/gpu/setup.sh" in done.stdout


@pytest.mark.parametrize("missing", ["vllm.tar.gz", "stage/eval/dev.tar.xz"])
def test_a_missing_input_is_named_before_anything_is_cut(tmp_path: Path, missing: str) -> None:
    staged_inputs(tmp_path)
    (tmp_path / missing).unlink()
    done = stage(tmp_path)
    assert done.returncode == 1
    assert f"missing {tmp_path / missing}" in done.stderr
    assert not (tmp_path / "stage" / "bp").exists()
