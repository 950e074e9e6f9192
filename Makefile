# The two commands of the README's quick start, and the steps they share.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test lint vllm-cpu clean

demo: $(STAMP)  ## the server on examples/sample_project, driven over LSP, against vLLM
	$(VENV)/bin/headstart demo

test: $(STAMP) vllm-cpu lint  ## lint, type-check and every test, the real-vLLM tier included
	HEADSTART_REQUIRE_VLLM=1 $(VENV)/bin/python -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check server cache tests benchmarks
	$(VENV)/bin/ruff format --check server cache tests benchmarks
	$(VENV)/bin/mypy

vllm-cpu:  ## vLLM's CPU build in its own environment (skipped when a GPU vLLM is configured)
	@if [ -z "$$HEADSTART_TEST_VLLM_URL" ]; then bash server/vllm_local.sh install-cpu >/dev/null; fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) build *.egg-info
