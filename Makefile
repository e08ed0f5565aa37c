# schedsim developer loop. `make demo` and `make test` work on a fresh machine with Rust and
# Python 3.11: the virtualenv, the release-built extension and the CLI are made on the way.

PYTHON ?= python3
VENV   := .venv
VBIN   := $(VENV)/bin
STAMP  := $(VENV)/.deps-stamp

# The demo: the shipped comparison experiment (experiments/quick.toml), printing its MMTests
# tables; the per-run Parquet store, tables and report.html go to out/demo.
DEMO_ARGS := compare experiments/quick.toml --out out/demo

.PHONY: venv build test lint fmt bench demo quick clean distclean validate models-doc

venv: $(STAMP)

# Idempotent: redone only when pyproject.toml (the list of dependencies) changes.
$(STAMP): pyproject.toml scripts/pydeps.py
	$(PYTHON) -m venv $(VENV)
	$(VBIN)/python scripts/pydeps.py dev > $(VENV)/requirements-dev.txt
	$(VBIN)/python -m pip install --quiet --disable-pip-version-check -r $(VENV)/requirements-dev.txt
	touch $@

build: venv
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VBIN)/maturin develop --release

test: build
	cargo test --workspace --exclude schedsim-py
	$(VBIN)/pytest -q tests

lint: venv
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VBIN)/ruff check python tests scripts
	$(VBIN)/ruff format --check python tests scripts

fmt: venv
	cargo fmt --all
	$(VBIN)/ruff check --fix python tests scripts
	$(VBIN)/ruff format python tests scripts

bench: build
	$(VBIN)/schedsim bench

demo: build
	$(VBIN)/schedsim $(DEMO_ARGS)

# The shipped comparison (experiments/quick.toml): tables on stdout; per-run Parquet files, the
# tables and report.html in out/quick (rerunning loads the stored runs).
quick: build
	$(VBIN)/schedsim compare experiments/quick.toml --out out/quick

clean:
	rm -rf target python/schedsim/_core*.so .pytest_cache .ruff_cache
	find python tests scripts -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)

# Validation against the seeds' published results (scripts/validate.py): runs
# experiments/seed000-*.toml at full size (stored under out/validate, so it resumes) and writes
# docs/validation.md and docs/validation.json. VALIDATE_ARGS=--quick for the reduced study.
validate: build
	$(VBIN)/python scripts/validate.py $(VALIDATE_ARGS)

# docs/models.md: every model constant with its value, kind and source, generated from the
# workload data and the machine presets (scripts/models_doc.py).
models-doc: venv
	$(VBIN)/python scripts/models_doc.py
