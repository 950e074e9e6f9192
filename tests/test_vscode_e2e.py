"""The VS Code extension end to end, as a new user meets it: the packaged .vsix installed
into code-server, a fresh copy of the sample project and fresh user data, headless
Chromium typing into the editor, Headstart's ghost text on screen, Tab to accept it.

Everything on the path is real (code-server, the extension, vscode-languageclient,
`python -m server serve`) except the model: the fake OpenAI server answers each prompt
with the text scripted here, at once. The browser is driven by
clients/vscode/e2e/ghost_text.mjs (playwright-core), which writes results.json and
screenshots into test-output/vscode-e2e/. `make test` installs what this needs
(clients/vscode/scripts/install_e2e_deps.sh) and builds the .vsix; without them the test
is skipped, or fails under HEADSTART_REQUIRE_E2E=1 (as `make test` sets it).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TEST_CACHE, server_env
from fake_openai import FakeBackend

from server.backend.local_vllm import free_port

CLIENT = ROOT / "clients" / "vscode"
VSIX = CLIENT / "headstart.vsix"
DRIVER = CLIENT / "e2e" / "ghost_text.mjs"
CODE_SERVER = ROOT / ".tools" / "code-server" / "node_modules" / "code-server" / "out" / "node"
CODE_SERVER_ENTRY = CODE_SERVER / "entry.js"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUTPUT = ROOT / "test-output" / "vscode-e2e"
CODE_SERVER_VERSION = "4.100.3"
SAMPLE = ROOT / "examples" / "sample_project"
ORIGINAL = (SAMPLE / "main.py").read_text().splitlines()
SERVED = re.compile(r"inline completion in ([0-9.]+) ms")

KEYSTROKES = 20
ACCEPT_TYPED = "report = stock"
ACCEPT_SUGGESTED = '_report(Warehouse("Depot"))'
LATENCY_PREFIX = "v"
LATENCY_TEXT = " = measure({k})"
CHANGED_MAX_TOKENS = 77
"""For multilineMaxTokens, the cap of every completion request while completion.continueInBackground
(the default) has one-line suggestions stream on to the end of the block."""
TOGGLE_WORD = "toggled"
TOGGLE_SUGGESTED = " = True"
MAIN_START = ORIGINAL.index("def main() -> None:")
MAIN = "\n".join(ORIGINAL[MAIN_START : ORIGINAL.index("", MAIN_START)])
DOCSTRING = '"""Stock a depot, ship from it and print its report."""'
DOCUMENTED = MAIN.replace(":\n", f":\n    {DOCSTRING}\n", 1)
INSTRUCTION = "call the depot Main depot"
REWRITTEN = DOCUMENTED.replace('Warehouse("Depot")', 'Warehouse("Main depot")')
FENCE = "\n```\nDone."
HOVER_LINE = "print(stock_report(depot))"
HOVER_WORD = "stock_report"
"""Hovered in main.py; defined in inventory/report.py, which the hover names with its line."""
REPORT = (SAMPLE / "inventory" / "report.py").read_text().splitlines()
HOVER_DEFINITION = next(k for k, line in enumerate(REPORT) if line.startswith("def stock_report("))
HOVER_SIGNATURE = REPORT[HOVER_DEFINITION]
HOVER_DOC = REPORT[HOVER_DEFINITION + 1].strip().strip('"')
HOVER_WHERE = f"inventory/report.py:{HOVER_DEFINITION + 1}"
SETTING_TITLE = "Headstart \u203a Completion: Multiline Max Tokens"
"""How the Settings editor titles headstart.completion.multilineMaxTokens."""

USER_SETTINGS: dict[str, Any] = {
    # word-based suggestions would open the suggest widget over the ghost text, and Tab
    # would then take the widget's word; a language extension's completions would do the same
    "editor.wordBasedSuggestions": "off",
    "workbench.startupEditor": "none",
    "extensions.ignoreRecommendations": True,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
}


def missing_tools() -> list[str]:
    missing = [str(p) for p in (CODE_SERVER_ENTRY, VSIX, CHROMIUM) if not p.exists()]
    if not (CLIENT / "node_modules" / "playwright-core").is_dir():
        missing.append("clients/vscode/node_modules (npm ci)")
    if shutil.which("node") is None:
        missing.append("node")
    return missing


def rules() -> list[dict[str, Any]]:
    """The model's answers. The first rule whose text is in the prompt wins, and a prompt
    holds everything typed before: so the latency words come newest first (the prompt for
    `v07` holds `v00`…`v06` too), and before the line typed for Tab, which stays."""
    latency = [
        {"match": f"{LATENCY_PREFIX}{k:02d}", "text": LATENCY_TEXT.format(k=k) + "\n"}
        for k in reversed(range(KEYSTROKES))
    ]
    toggled = {"match": TOGGLE_WORD, "text": TOGGLE_SUGGESTED + "\n"}
    # refactorings: the code in the fence the prompt opened, as an instruct model answers
    refactorings = [
        {"match": f"follows: {INSTRUCTION}", "text": REWRITTEN + FENCE, "chunk_chars": 64},
        {"match": "Add documentation to `main`", "text": DOCUMENTED + FENCE, "chunk_chars": 64},
    ]
    accept = {"match": ACCEPT_TYPED, "text": ACCEPT_SUGGESTED + "\n"}
    return [*refactorings, toggled, *latency, accept]


@contextlib.contextmanager
def process_group(cmd: list[str], log: Path, **kwargs: Any) -> Iterator[subprocess.Popen[bytes]]:
    """Run `cmd` in a session of its own; at the end stop its whole process group
    (code-server's and Chromium's helpers too), SIGKILL after 10 s."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs
        )
        try:
            yield proc
        finally:
            for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                deadline = time.monotonic() + grace
                while group_alive(proc.pid) and time.monotonic() < deadline:
                    proc.poll()
                    time.sleep(0.1)
                if not group_alive(proc.pid):
                    break
            proc.wait(5)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Wait until `url` answers 200; fail at once, with its log, if `proc` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited ({proc.returncode}):\n{log.read_text()}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s:\n{log.read_text()}")


def require_e2e_tools() -> None:
    """Skip without what the e2e needs; fail instead under HEADSTART_REQUIRE_E2E=1."""
    missing = missing_tools()
    if missing:
        message = f"the VS Code e2e needs {', '.join(missing)} (make test installs them)"
        if os.environ.get("HEADSTART_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)


def run_driver_in_code_server(
    driver: Path,
    config: dict[str, Any],
    tmp_path: Path,
    output: Path,
    project: Path,
    settings: tuple[dict[str, Any], dict[str, Any]],
    env: dict[str, str],
    *,
    timeout: float,
    trust_the_workspace: bool = True,
) -> subprocess.Popen[bytes]:
    """Install the .vsix into fresh user data with these (User, Machine) settings, serve
    `project` with code-server (`env` for it and the driver), start headless Chromium and
    run the playwright `driver` on config.json: `config` with the window's address, the
    DevTools address, `output` and main.py. The driver's process, ended (or `timeout` s
    past); `trust_the_workspace=False` leaves code-server to ask about it (Restricted
    Mode)."""
    user_data = tmp_path / "user-data"
    extensions = tmp_path / "extensions"
    for folder, values in zip(("User", "Machine"), settings, strict=True):
        (user_data / folder).mkdir(parents=True)
        (user_data / folder / "settings.json").write_text(json.dumps(values, indent=2))
    code_server = ["node", str(CODE_SERVER_ENTRY)]
    dirs = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    subprocess.run(
        [*code_server, *dirs, "--install-extension", str(VSIX)],
        check=True,
        env=env,
        capture_output=True,
        timeout=120,
    )
    port, cdp_port = free_port(), free_port()
    chromium = [
        str(CHROMIUM),
        *CHROMIUM_FLAGS,
        f"--remote-debugging-port={cdp_port}",
        f"--user-data-dir={tmp_path / 'chromium'}",
        "about:blank",
    ]
    serve = [
        *code_server,
        *dirs,
        "--bind-addr",
        f"127.0.0.1:{port}",
        "--auth",
        "none",
        "--disable-telemetry",
        "--disable-update-check",
        *(["--disable-workspace-trust"] if trust_the_workspace else []),
        "--disable-getting-started-override",
        str(project),
    ]
    config = {
        "url": f"http://127.0.0.1:{port}/?folder={project}",
        "cdpUrl": f"http://127.0.0.1:{cdp_port}",
        "outDir": str(output),
        "file": "main.py",
        **config,
    }
    (output / "config.json").write_text(json.dumps(config, indent=2))
    with (
        process_group(serve, output / "code-server.log", env=env) as server,
        process_group(chromium, output / "chromium.log") as browser,
    ):
        wait_until_up(f"http://127.0.0.1:{port}/healthz", server, output / "code-server.log", 60)
        wait_until_up(
            f"http://127.0.0.1:{cdp_port}/json/version", browser, output / "chromium.log", 60
        )
        with (
            process_group(
                ["node", str(driver), str(output / "config.json")],
                output / "driver.log",
                cwd=CLIENT,
                env=env,
            ) as process,
            contextlib.suppress(subprocess.TimeoutExpired),
        ):
            process.wait(timeout=timeout)
    return process


@pytest.fixture
def output() -> Path:
    shutil.rmtree(OUTPUT, ignore_errors=True)
    OUTPUT.mkdir(parents=True)
    return OUTPUT


def test_ghost_text_in_code_server_is_the_models_and_tab_accepts_it(
    fake: FakeBackend, tmp_path: Path, output: Path
) -> None:
    require_e2e_tools()

    fake.script(rules(), default_text="")
    project = Path(shutil.copytree(SAMPLE, tmp_path / "project"))
    user = USER_SETTINGS
    # how to start the server, the backend and the log file are machine settings: in
    # code-server (as in any remote window) those come from the remote's settings,
    # Machine/settings.json, not the user's
    machine = {
        "headstart.server.pythonPath": sys.executable,
        "headstart.server.env": {"PYTHONPATH": str(ROOT), "HEADSTART_CACHE_DIR": str(TEST_CACHE)},
        "headstart.backend.url": fake.url,
        "headstart.log.file": str(output / "server.log"),
    }
    env = server_env()
    env.pop("PYTHONPATH")  # the extension's setting must be what brings the server's code
    config = {
        "path": str(project / "main.py"),
        "accept": {"type": ACCEPT_TYPED, "expected": ACCEPT_SUGGESTED},
        "latency": {"count": KEYSTROKES, "prefix": LATENCY_PREFIX, "text": LATENCY_TEXT},
        "change": {
            "key": "headstart.completion.multilineMaxTokens",
            "title": SETTING_TITLE,
            "value": str(CHANGED_MAX_TOKENS),
            "eventsUrl": f"{fake.base_url}/_events",
            "maxTokens": CHANGED_MAX_TOKENS,
        },
        "commands": {
            "word": TOGGLE_WORD,
            "expected": TOGGLE_SUGGESTED,
            "serverLog": str(output / "server.log"),
        },
        "refactor": {
            "line": MAIN_START + 2,  # inside main(), whose refactorings are offered
            "docstring": DOCSTRING,
            "instruction": INSTRUCTION,
            "rewritten": 'Warehouse("Main depot")',
        },
        "hover": {
            "line": HOVER_LINE,
            "word": HOVER_WORD,
            "signature": HOVER_SIGNATURE,
            "where": HOVER_WHERE,
        },
    }

    started, load = time.monotonic(), os.getloadavg()[0]
    settings = (user, machine)
    driver = run_driver_in_code_server(
        DRIVER, config, tmp_path, output, project, settings, env, timeout=240
    )
    elapsed = time.monotonic() - started
    assert (
        tmp_path / "extensions" / "headstart.headstart-0.1.0" / "out" / "extension.js"
    ).is_file()

    results = json.loads((output / "results.json").read_text())
    assert "error" not in results, results["error"] + "\n" + (output / "driver.log").read_text()
    assert driver.returncode == 0, (output / "driver.log").read_text()

    # the model's text, as ghost text after what was typed; Tab puts it in the buffer
    assert results["ghostText"] == ACCEPT_SUGGESTED
    assert results["lineBeforeTab"] == ACCEPT_TYPED
    assert results["lineAfterTab"] == ACCEPT_TYPED + ACCEPT_SUGGESTED
    saved = results["savedAfterTab"].splitlines()
    assert saved[: len(ORIGINAL)] == ORIGINAL
    assert saved[len(ORIGINAL)] == ACCEPT_TYPED + ACCEPT_SUGGESTED
    prompts = [event["prompt"] for event in fake.events()]
    assert any(ACCEPT_TYPED in prompt for prompt in prompts)

    # a setting changed while running reaches the server (didChangeConfiguration)
    assert results["settingTitle"] == SETTING_TITLE
    assert results["settingBefore"] == "128"
    assert results["settingChange"]["keysUntilApplied"] >= 1
    max_tokens = [event["max_tokens"] for event in fake.events()]
    changed = max_tokens.index(CHANGED_MAX_TOKENS)
    assert 128 in max_tokens[:changed]  # the default, in the requests before it

    # the commands: Disable stops the ghost text, Enable brings it back, Restart restarts,
    # Show the Log shows the server's log
    assert "circle-slash" in results["statusBarDisabled"]["label"]
    assert results["ghostWhileDisabled"] == ""
    assert results["ghostAfterEnable"] == TOGGLE_SUGGESTED
    assert results["ghostAfterRestart"] == TOGGLE_SUGGESTED
    assert results["serverStarts"] == 2
    assert "server.lsp.handlers: inline completion in" in results["logPanel"]  # the server's log
    server_log = (output / "server.log").read_text()
    assert " ERROR " not in server_log, server_log

    # the refactorings: the model's rewrites applied to main() (and saved), the instruction
    # asked for in an input box and sent to the model
    assert REWRITTEN in results["savedAtEnd"]
    assert REWRITTEN in (project / "main.py").read_text()
    assert "How should the code be rewritten?" in results["rewritePrompt"]
    assert any(f"follows: {INSTRUCTION}" in prompt for prompt in prompts)

    # the hover over a name imported from another file: that file's definition, with its
    # signature, docstring and a link to its line
    signature, doc, where = results["hover"]["text"].split("\n\n")
    assert signature == HOVER_SIGNATURE
    assert doc == HOVER_DOC
    assert re.fullmatch(
        rf"{re.escape(HOVER_WHERE)} \u00b7 (not )?in the completion context now.*", where
    )
    report = (project / "inventory" / "report.py").as_uri()
    assert results["hover"]["link"] == f"{report}#L{HOVER_DEFINITION + 1}"

    samples = results["latency"]["samples"]
    assert [s["key"] for s in samples] == [f"{LATENCY_PREFIX}{k:02d}" for k in range(KEYSTROKES)]
    for k, sample in enumerate(samples):
        assert LATENCY_TEXT.format(k=k) in sample["ghost"]
        assert 0 < sample["ms"] < 10_000
    latencies = [s["ms"] for s in samples]
    assert results["statusBarAtStart"]["text"].startswith("Headstart")
    assert re.fullmatch(r"Headstart \d+ ms", results["statusBarAtEnd"]["text"])  # last latency
    # the server's own time for the same requests, from the log file the settings named
    served = [float(ms) for ms in SERVED.findall((output / "server.log").read_text())]
    assert len(served) >= KEYSTROKES
    summary = (
        f"VS Code e2e (code-server {CODE_SERVER_VERSION}, headless Chromium): keystroke to "
        f"visible ghost text over {len(latencies)} keystrokes, model answering at once: "
        f"p50 {statistics.median(latencies):.1f} ms, p99 {percentile(latencies, 99):.1f} ms "
        f"(DOM updated: p50 {statistics.median(s['domMs'] for s in samples):.1f} ms; "
        f"the server's part: p50 {statistics.median(served):.1f} ms); "
        f"whole run {elapsed:.0f} s, 1-min load average {load:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end; samples (ms): "
        f"{', '.join(f'{ms:.0f}' for ms in latencies)}"
    )
    (output / "summary.txt").write_text(summary + "\n")
    print("\n" + summary)


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile (with 20 values, p99 is the largest)."""
    ranked = sorted(values)
    return ranked[max(0, min(len(ranked) - 1, math.ceil(p / 100 * len(ranked)) - 1))]


RESTRICTED_DRIVER = CLIENT / "e2e" / "restricted.mjs"
RESTRICTED_TYPED = "total = count"
RESTRICTED_SUGGESTED = "_items(depot)"
RESTRICTED_MAX_TOKENS = 77
"""multilineMaxTokens in the repository's settings: a setting it may choose, so the
requests carrying it show that VS Code read that settings file at all."""
CANARY = "canary-not-an-api-key"


def trap_script(folder: Path, name: str) -> tuple[Path, Path]:
    """A Python script that records that it ran (with its arguments), and that record."""
    record = folder / f"{name}-ran"
    script = folder / f"{name}.py"
    script.write_text(
        f"import pathlib, sys\npathlib.Path({str(record)!r}).write_text(' '.join(sys.argv))\n"
    )
    return script, record


def test_a_restricted_window_lets_the_repository_choose_no_key_command_or_path(
    fake: FakeBackend, tmp_path: Path, output: Path
) -> None:
    """A repository's .vscode/settings.json tries every setting it must not choose, in a
    window that does not trust it; none takes effect, a harmless one does."""
    require_e2e_tools()

    fake.script([{"match": RESTRICTED_TYPED, "text": RESTRICTED_SUGGESTED + "\n"}], default_text="")
    traps = tmp_path / "traps"
    traps.mkdir()
    vllm, vllm_ran = trap_script(traps, "vllm")
    server_command, server_ran = trap_script(traps, "server-command")
    written = tmp_path / "written"
    project = Path(shutil.copytree(SAMPLE, tmp_path / "project"))
    with FakeBackend(default_text="stolen()\n") as attacker:
        (project / ".vscode").mkdir()
        repository = {
            "headstart.backend.url": attacker.url,
            "headstart.backend.apiKeyEnv": "HEADSTART_TEST_CANARY",
            "headstart.backend.mode": "local",
            "headstart.backend.local.model": "dummy",
            "headstart.backend.local.extraArgs": ["--trust-remote-code"],
            "headstart.completion.tokenizer": str(written / "tokenizer.json"),
            "headstart.log.file": str(written / "server.log"),
            "headstart.log.requestTrace": str(written / "trace.jsonl"),
            "headstart.cacheDir": str(written / "cache"),
            "headstart.server.command": [sys.executable, str(server_command)],
            "headstart.completion.multilineMaxTokens": RESTRICTED_MAX_TOKENS,
        }
        (project / ".vscode" / "settings.json").write_text(json.dumps(repository, indent=2))
        user = USER_SETTINGS | {
            "security.workspace.trust.enabled": True,
            "security.workspace.trust.startupPrompt": "never",
        }
        server_log = output / "server.log"
        machine = {
            "headstart.server.pythonPath": sys.executable,
            "headstart.server.env": {
                "PYTHONPATH": str(ROOT),
                "HEADSTART_API_KEY": "s3cret",
                "HEADSTART_TEST_CANARY": CANARY,
                "HEADSTART_HOME": str(tmp_path / "home"),
                "HEADSTART_VLLM_COMMAND": f"{sys.executable} {vllm}",
            },
            "headstart.backend.url": fake.url,
            "headstart.cacheDir": str(TEST_CACHE),
            "headstart.log.file": str(server_log),
        }
        env = server_env()
        env.pop("PYTHONPATH")
        env.pop("HEADSTART_CACHE_DIR")  # the Machine settings name it, as a user would
        config = {"type": RESTRICTED_TYPED, "expected": RESTRICTED_SUGGESTED}
        settings = (user, machine)
        run_driver_in_code_server(
            RESTRICTED_DRIVER, config, tmp_path, output, project, settings, env,
            timeout=180, trust_the_workspace=False,
        )  # fmt: skip
        stolen = attacker.events()

    # what the repository chose did not happen: nothing ran, nothing was written, nothing
    # was sent to its backend
    assert not vllm_ran.exists(), f"the repository's model ran: {vllm_ran.read_text()}"
    assert not server_ran.exists(), f"the repository's server ran: {server_ran.read_text()}"
    assert not written.exists(), sorted(p.name for p in written.iterdir())
    assert stolen == []
    results = json.loads((output / "results.json").read_text())
    assert "error" not in results, results["error"] + "\n" + (output / "driver.log").read_text()
    assert results["restrictedMode"]
    # the user's backend and key served the suggestion, with the repository's harmless setting
    assert results["ghostText"] == RESTRICTED_SUGGESTED
    requests = fake.events()
    assert requests and all(r["headers"]["authorization"] == "Bearer s3cret" for r in requests)
    assert CANARY not in json.dumps(requests)
    assert requests[-1]["max_tokens"] == RESTRICTED_MAX_TOKENS  # the settings file was read
    log = server_log.read_text()
    assert "local vLLM" not in log
    # VS Code and the extension never sent them: the server had nothing to ignore
    assert "from the workspace configuration" not in log, log
