#!/usr/bin/env python3
"""A stand-in for `vllm serve`: takes vLLM's arguments, logs like it, and serves the fake
model (fake_openai.py) on --host/--port under --served-model-name. Given SGLang's
arguments (`--model-path`) or TensorRT-LLM's (the model first, an options file), it stands
in for that engine instead: the fake then answers as that engine does (fake_flavors.py).

Why: starting, sharing and stopping the local backend is process management (pids,
process groups, a state file, a lock, health checks), tested here against a real process
that behaves like vLLM where it matters, without vLLM's minutes of start-up. The tests
run it through HEADSTART_VLLM_COMMAND="python tests/fake_vllm.py".

What it does is chosen with environment variables:
  FAKE_VLLM_ARGS_FILE      append this start's arguments (one JSON line) to the file
  FAKE_VLLM_LOAD_S         seconds of "loading the model" before it listens (default 0)
  FAKE_VLLM_FAIL           log this line and exit with code 1 during start-up
  FAKE_VLLM_FAIL_ONCE      a path: the first start to create it fails as FAKE_VLLM_FAIL does
                           (one replica of several running out of memory), the others serve
  FAKE_VLLM_TEXT           what the fake model answers (fake_openai's --default-text)
  FAKE_VLLM_ENGINE         1: start an "engine core" child in its process group, as vLLM does;
                           its pid goes to FAKE_VLLM_ENGINE_PID_FILE
  FAKE_VLLM_ENGINE_IGNORES_TERM  1: that child ignores SIGTERM (a hung engine)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fake_openai

ENGINE = """
import signal, sys, time
if sys.argv[1] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("engine core ready", flush=True)
while True:
    time.sleep(1)
"""


def _first_to_create(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", "--model-path", dest="model")
    parser.add_argument("--served-model-name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--gpu-memory-utilization", type=float)
    parser.add_argument("--enable-prefix-caching", action="store_true")
    parser.add_argument("--scheduling-policy")
    parser.add_argument("--load-format")
    parser.add_argument("--extra_llm_api_options", help="trtllm-serve's options file")
    argv = sys.argv[1:]
    first = argv.pop(0) if argv and not argv[0].startswith("-") else None  # trtllm-serve MODEL
    args, rest = parser.parse_known_args(argv)
    flavor = "trtllm" if first else "sglang" if "--model-path" in argv else "vllm"
    model = args.model or first
    if model is None:
        parser.error("no model: --model, --model-path, or trtllm-serve's MODEL")
    if args.extra_llm_api_options:  # trtllm-serve reads it as YAML; Headstart writes JSON
        options = json.loads(Path(args.extra_llm_api_options).read_text())
        print(f"INFO fake TensorRT-LLM: options {options}", flush=True)
    if record := os.environ.get("FAKE_VLLM_ARGS_FILE"):
        with open(record, "a") as out:
            out.write(json.dumps(sys.argv[1:]) + "\n")
    print(f"INFO fake vLLM: args {vars(args)}, unknown {rest}", flush=True)

    if os.environ.get("FAKE_VLLM_ENGINE") == "1":
        ignores = os.environ.get("FAKE_VLLM_ENGINE_IGNORES_TERM", "0")
        engine = subprocess.Popen([sys.executable, "-c", ENGINE, ignores])
        if pid_file := os.environ.get("FAKE_VLLM_ENGINE_PID_FILE"):
            Path(pid_file).write_text(str(engine.pid))

    load_s = float(os.environ.get("FAKE_VLLM_LOAD_S", "0"))
    deadline = time.monotonic() + load_s
    while time.monotonic() < deadline:
        print(f"INFO Loading weights ({deadline - time.monotonic():.1f} s left)", flush=True)
        time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    once = os.environ.get("FAKE_VLLM_FAIL_ONCE")
    if (failure := os.environ.get("FAKE_VLLM_FAIL")) and (not once or _first_to_create(once)):
        print(f"ERROR {failure}", flush=True)
        return 1
    name = args.served_model_name or (Path(model).name if flavor == "trtllm" else model)
    serve = ["--host", args.host, "--port", str(args.port), "--model", name, "--flavor", flavor]
    if text := os.environ.get("FAKE_VLLM_TEXT"):
        serve += ["--default-text", text]
    return fake_openai.main(serve)


if __name__ == "__main__":
    sys.exit(main())
