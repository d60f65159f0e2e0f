"""The API reference: one page per public package, every page in the site's nav, every public name anchored.

tools/check_reference.py does the anchor check on a built site (.ci/run calls it after ``mkdocs build --strict``);
here it runs on a small site made by hand (so the check itself is tested without mkdocs) and, when mkdocs is
installed (``pip install -e '.[docs]'``), on the real site: the one named by ``HANDRAIL_DOCS_SITE`` when .ci/run
has just built it, else one built here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.docs_examples import DOCS, ROOT
from tests.test_public_api import PUBLIC_PACKAGES

SCRIPT = ROOT / "tools" / "check_reference.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_check_reference", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load_script()


class _ConfigLoader(yaml.SafeLoader):
    """Reads mkdocs.yml, whose ``!!python/name:`` tags (the Mermaid fence's formatter) are kept as strings."""


_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/name:", lambda loader, suffix, node: suffix)


def _nav_pages(entries: list[Any]) -> list[str]:
    pages = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


CONFIG = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)
NAV = _nav_pages(CONFIG["nav"])


def test_the_script_counts_the_public_packages_as_the_api_test_does() -> None:
    assert check.public_packages() == PUBLIC_PACKAGES


def test_one_reference_page_per_public_package_rendering_it() -> None:
    pages = {page.stem: page for page in (DOCS / "reference").glob("*.md")}
    assert set(pages) == set(PUBLIC_PACKAGES)
    for package, page in pages.items():
        assert f"\n::: {package}\n" in page.read_text(encoding="utf-8"), page


def test_the_nav_lists_every_page_once_and_the_reference_in_package_order() -> None:
    on_disk = sorted(str(page.relative_to(DOCS)) for page in DOCS.glob("**/*.md"))
    assert sorted(NAV) == sorted(set(NAV)), "a page is listed twice"
    assert not set(on_disk) - set(NAV), "pages missing from the nav of mkdocs.yml"
    reference = [page for page in NAV if page.startswith("reference/")]
    assert reference == [f"reference/{package}.md" for package in PUBLIC_PACKAGES]


def test_every_page_of_the_nav_exists() -> None:
    assert [page for page in NAV if not (DOCS / page).is_file()] == []


def _fake_site(root: Path, drop: str | None = None) -> Path:
    for package in PUBLIC_PACKAGES:
        names = [f"{package}.{name}" for name in importlib.import_module(package).__all__]
        html = "".join(f'<h2 id="{name}">x</h2>' for name in names if name != drop)
        page = root / "reference" / package / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html><body>{html}</body></html>", encoding="utf-8")
    return root


def test_the_check_passes_a_site_with_every_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _fake_site(tmp_path)
    assert check.missing(site) == []
    assert check.main(["check_reference.py", str(site)]) == 0
    assert "each with an anchor" in capsys.readouterr().out


def test_the_check_names_a_missing_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _fake_site(tmp_path, drop="handrail.tools.Toolset")
    assert check.missing(site) == ["reference/handrail.tools/index.html: no anchor for handrail.tools.Toolset"]
    assert check.main(["check_reference.py", str(site)]) == 1
    assert "1 public names or pages missing" in capsys.readouterr().err


def test_the_check_names_a_page_not_built(tmp_path: Path) -> None:
    problems = check.missing(tmp_path)
    assert f"handrail.core: its reference page was not built under {tmp_path}" in problems


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("HANDRAIL_DOCS_SITE")
    if given:
        return Path(given)
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
        pytest.skip("mkdocs and mkdocstrings are not installed (pip install -e '.[docs]')")
    site = tmp_path_factory.mktemp("site")
    # Not --strict: this test is about the reference; .ci/run builds the whole site strictly.
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return site


def test_the_built_reference_anchors_every_public_name(built_site: Path) -> None:
    assert check.missing(built_site) == []


def _command_ids(command: Any, path: str) -> list[str]:
    ids = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        ids += _command_ids(sub, f"{path}-{name}")
    return ids


def test_the_cli_page_documents_every_subcommand(built_site: Path) -> None:
    from handrail.cli import main

    page = (built_site / "cli" / "index.html").read_text(encoding="utf-8")
    ids = _command_ids(main, "handrail")
    assert len(ids) > 5
    assert [command for command in ids if f'id="{command}"' not in page] == []
