"""Check that the built API reference documents every public name: ``python tools/check_reference.py SITE_DIR``.

SITE_DIR is the output of ``mkdocs build``. A public package is one whose dotted path has no underscored part
(``handrail.cli``, the command, aside), as tests/test_public_api.py counts them. Each needs a page
``docs/reference/<package>.md``, and every name of its ``__all__`` an anchor ``id="<package>.<name>"`` on the
built page (the id mkdocstrings gives each object it renders). And no page of the site may show a reST role as
raw text (``:class:<code>x</code>``: docs/_hooks/sphinx_roles.py rewrites them while the site is built). Prints
what is missing or left, and exits 1, or exits 0.
"""

from __future__ import annotations

import html
import importlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "handrail"
REFERENCE = ROOT / "docs" / "reference"
NOT_A_LIBRARY = {"handrail.cli"}
_ID = re.compile(r"""\bid=["']([^"']+)["']""")
# A docstring's Sphinx role that mkdocstrings (Google style) left as text: `:class:` then the code it became.
_RAW_ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj):<code>.*?</code>", re.DOTALL)


def public_packages() -> list[str]:
    """The dotted names of the public packages, sorted by their ``__init__.py`` path."""
    names = []
    for init in sorted(SOURCE.rglob("__init__.py")):
        parts = ("handrail", *init.parent.relative_to(SOURCE).parts)
        name = ".".join(parts)
        if not any(part.startswith("_") for part in parts) and name not in NOT_A_LIBRARY:
            names.append(name)
    return names


def built_page(site: Path, package: str) -> Path | None:
    """The built HTML of ``docs/reference/<package>.md`` (directory URLs or not), or None when there is none."""
    for candidate in (site / "reference" / package / "index.html", site / "reference" / f"{package}.html"):
        if candidate.is_file():
            return candidate
    return None


def missing(site: Path) -> list[str]:
    """One line for each page or anchor the reference lacks; empty when it documents every public name."""
    problems = []
    for package in public_packages():
        if not (REFERENCE / f"{package}.md").is_file():
            problems.append(f"docs/reference/{package}.md: no page for {package}")
            continue
        page = built_page(site, package)
        if page is None:
            problems.append(f"{package}: its reference page was not built under {site}")
            continue
        ids = {html.unescape(found) for found in _ID.findall(page.read_text(encoding="utf-8"))}
        exported = importlib.import_module(package).__all__
        problems += [
            f"{page.relative_to(site)}: no anchor for {package}.{name}"
            for name in exported
            if f"{package}.{name}" not in ids
        ]
    return problems


def raw_roles(site: Path) -> list[str]:
    """One line for each built file (HTML pages, the search index) still showing a raw role, naming the first."""
    problems = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in {".html", ".json"} or not path.is_file():
            continue
        found = _RAW_ROLE.findall(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            first = " ".join(found[0].split())
            problems.append(f"{path.relative_to(site)}: {len(found)} raw reST roles, the first {first}")
    return problems


def main(argv: list[str]) -> int:
    """Check the site named by ``argv[1]``; print the problems."""
    if len(argv) != 2:
        print(f"usage: {argv[0]} SITE_DIR (the output of mkdocs build)", file=sys.stderr)
        return 2
    site = Path(argv[1])
    problems = missing(site)
    roles = raw_roles(site)
    for problem in problems + roles:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} public names or pages missing from the API reference", file=sys.stderr)
    if roles:
        print(f"{len(roles)} built files show reST roles as raw text (docs/_hooks/sphinx_roles.py)", file=sys.stderr)
    if problems or roles:
        return 1
    count = sum(len(importlib.import_module(p).__all__) for p in public_packages())
    print(f"API reference: {count} public names of {len(public_packages())} packages, each with an anchor")
    print("no raw reST role left in the site")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
