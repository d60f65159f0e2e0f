# Development commands. `make check` runs, against the current environment, ruff, mypy, import-linter, the strict
# docs build with tools/check_reference.py, and pytest without the model and postgres markers: .ci/run's steps but
# its PostgreSQL and embedded-model tests (and its fresh venv); `make ci` runs .ci/run itself.
PYTHON ?= python3
PYTEST_MARKERS ?= not model and not postgres
# Where `make docs` builds the site (not committed: site/ is in .gitignore).
SITE_DIR ?= site

.PHONY: install test lint fmt typecheck importcheck docs docs-serve check bench bench-peers ci

# Everything `make check` needs: the test tools, the lint and type tools (and temporalio, which mypy reads), the docs tools.
install:
	$(PYTHON) -m pip install -e '.[test,dev,docs,temporal]'

test:
	$(PYTHON) -m pytest -m '$(PYTEST_MARKERS)'

lint:
	$(PYTHON) -m ruff check src tests tools bench docs/_hooks
	$(PYTHON) -m ruff format --check src tests tools bench docs/_hooks

fmt:
	$(PYTHON) -m ruff format src tests tools bench docs/_hooks
	$(PYTHON) -m ruff check --fix src tests tools bench docs/_hooks

typecheck:
	$(PYTHON) -m mypy

importcheck:
	$(PYTHON) -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())'

# The site, built strictly (a broken link, reference or nav entry fails), then every public name checked for an
# anchor in its API reference.
docs:
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict --site-dir '$(SITE_DIR)'
	$(PYTHON) tools/check_reference.py '$(SITE_DIR)'

docs-serve:
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs serve

check: lint typecheck importcheck docs
	HANDRAIL_DOCS_SITE='$(abspath $(SITE_DIR))' $(PYTHON) -m pytest -m '$(PYTEST_MARKERS)'

bench:
	$(PYTHON) bench/bench_handrail.py

# handrail next to the peers of ../shared/peer-bench (venvs under BENCH_DIR, default /tmp/bench), interleaved,
# one table; BENCH_ARGS=--quick for fewer repetitions; PYTHON= the interpreter handrail is installed in
# (e.g. .venv/bin/python). See bench/README.md.
bench-peers:
	$(PYTHON) bench/run_all.py $(BENCH_ARGS)

# The CI script itself: builds its own .venv in the repository and runs every check there.
ci:
	bash .ci/run
