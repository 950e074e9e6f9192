"""One rule for Headstart's folders (cache/user_dirs.py), and the move from the old place.

The real processes (`headstart index`, vllm_local.sh) are asked where they write; the move
is checked with macOS's convention, where the old folder (~/.cache/headstart) is not the
new one (~/Library/Caches/headstart), since on Linux the two are the same folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, server_env
from platformdirs.macos import MacOS

from cache.user_dirs import cache_folder, move_old_cache

SCRIPT = ROOT / "server" / "backend" / "vllm_local.sh"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return home


def old_cache(home: Path) -> Path:
    """A cache folder where Headstart used to keep it, with a project store and a venv."""
    old = home / ".cache" / "headstart"
    (old / "projects" / "abc-v5").mkdir(parents=True)
    (old / "projects" / "abc-v5" / "cache.db").write_bytes(b"store")
    (old / "vllm-cpu-venv" / "bin").mkdir(parents=True)
    (old / "vllm-cpu-venv" / "bin" / "python").write_text("#!/bin/sh\n")
    return old


def macos() -> MacOS:
    return MacOS("headstart", appauthor=False)


def test_linux_follows_xdg_and_ignores_a_relative_xdg(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "xdg"))
    assert cache_folder() == home / "xdg" / "headstart"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cache_folder() == home / ".cache" / "headstart"


def test_the_old_folder_moves_once_with_a_log_line(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="cache.user_dirs")
    old = old_cache(home)
    new = home / "Library" / "Caches" / "headstart"
    assert cache_folder(macos()) == new
    assert not old.exists()
    assert (new / "projects" / "abc-v5" / "cache.db").read_bytes() == b"store"
    assert (new / "vllm-cpu-venv" / "bin" / "python").is_file()
    moved = [r.getMessage() for r in caplog.records]
    says = f"moved Headstart's cache folder from {old} to {new} (this platform's convention)"
    assert moved == [says]
    caplog.clear()
    assert cache_folder(macos()) == new  # nothing left to move: no second line
    assert not caplog.records


def test_a_new_folder_that_exists_already_is_never_overwritten(home: Path) -> None:
    old = old_cache(home)
    new = home / "Library" / "Caches" / "headstart"
    (new / "projects").mkdir(parents=True)
    assert cache_folder(macos()) == new
    assert (old / "projects" / "abc-v5" / "cache.db").is_file()  # left for the user
    assert list((new / "projects").iterdir()) == []


def test_a_folder_that_cannot_be_moved_stays_with_a_warning(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = old_cache(home)
    (home / "Library").write_text("a file where the new folder's parent would go")
    assert not move_old_cache(old, home / "Library" / "Caches" / "headstart")
    assert (old / "projects" / "abc-v5" / "cache.db").is_file()
    assert "could not be moved there" in caplog.text and str(old) in caplog.text


def test_processes_racing_to_move_it_move_it_once(home: Path) -> None:
    old = old_cache(home)
    code = (
        "import logging, sys; logging.basicConfig(level=logging.INFO, stream=sys.stdout);"
        "from platformdirs.macos import MacOS; from cache.user_dirs import cache_folder;"
        "print(cache_folder(MacOS('headstart', appauthor=False)))"
    )
    env = server_env(HOME=str(home))
    racers = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [racer.communicate(timeout=30)[0] for racer in racers]
    new = home / "Library" / "Caches" / "headstart"
    assert all(out.strip().endswith(str(new)) for out in outputs)
    assert sum("moved Headstart's cache folder" in out for out in outputs) == 1
    assert not old.exists() and (new / "projects" / "abc-v5" / "cache.db").is_file()


def test_headstart_index_puts_its_store_in_the_platforms_cache_folder(home: Path) -> None:
    project = home / "project"
    project.mkdir()
    (project / "a.py").write_text("def f():\n    return 1\n")
    env = server_env(HOME=str(home), XDG_CACHE_HOME=str(home / "xdg"))
    del env["HEADSTART_CACHE_DIR"]
    done = subprocess.run(
        [sys.executable, "-m", "server", "index", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    stores = list((home / "xdg" / "headstart" / "projects").iterdir())
    assert len(stores) == 1 and f"at {stores[0]}" in done.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="vllm_local.sh is a bash script")
def test_vllm_local_sh_asks_the_same_rule_for_its_folder(home: Path) -> None:
    """Run by hand (no HEADSTART_HOME), the script finds vLLM's CPU build where Python
    would: a stand-in venv whose python says vllm imports, in the platform's folder."""
    venv_python = home / "xdg" / "headstart" / "vllm-cpu-venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("#!/bin/sh\nexit 0\n")
    venv_python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADSTART_", "VLLM_CPU"))}
    env |= {"HOME": str(home), "XDG_CACHE_HOME": str(home / "xdg")}
    env["HEADSTART_PYTHON"] = sys.executable
    done = subprocess.run(
        ["bash", str(SCRIPT), "install-cpu"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(venv_python)
