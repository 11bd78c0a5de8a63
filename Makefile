# The two commands: `make run` and `make test`. Each creates .venv and installs what it needs:
# `make run` only the runtime (requirements.txt); `make test` also the test extras (requirements-dev.txt)
# and, from npm, axe-core (the accessibility check) and the MCP Inspector's CLI. Separate stamps, so `make run` never pulls test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
AXE := $(VENV)/node/node_modules/axe-core/axe.min.js
INSPECTOR := $(VENV)/node/node_modules/.bin/mcp-inspector

.PHONY: run test bench eval clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(RUN_STAMP)

$(DEV_STAMP): requirements.txt requirements-dev.txt requirements-models.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $(DEV_STAMP)

# axe-core from the npm registry, for the browser accessibility test (tests/test_app_studio.py).
$(AXE):
	npm install --silent --no-audit --no-fund --prefix $(VENV)/node axe-core@4

# The MCP Inspector's CLI, for the test that lists and calls every tool with a client we did not write
# (tests/test_mcp_inspector.py). 0.15: later versions need Node 22 or newer.
$(INSPECTOR):
	npm install --silent --no-audit --no-fund --prefix $(VENV)/node @modelcontextprotocol/inspector@0.15

run: $(RUN_STAMP)
	$(BIN)/python app.py

test: $(DEV_STAMP) $(AXE) $(INSPECTOR)
	$(BIN)/python -m pytest -q

bench: $(RUN_STAMP)
	$(BIN)/python -m pipeline.bench

eval: $(RUN_STAMP)
	$(BIN)/python -m agent.eval

clean:
	rm -rf $(VENV) .pytest_cache
