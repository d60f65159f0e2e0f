"""MkDocs hook: the reST roles of the docstrings (``:class:`~a.b.C```) rendered as code, not as raw text.

The docstrings use Sphinx roles (``:class:``, ``:meth:``, ``:func:``, ``:attr:``, ``:mod:``, ``:data:``,
``:exc:``, ``:obj:``) while mkdocstrings parses them as Google style, which leaves ``:meth:<code>x</code>`` in
the page. This hook (``hooks:`` in mkdocs.yml) rewrites each, in the HTML of every page, the way Sphinx shows it:

* ``:class:<code>~a.b.C</code>`` → ``<code>C</code>`` (``~``: the last part only);
* ``:class:<code>a.b.C</code>`` → ``<code>a.b.C</code>``;
* ``:meth:<code>title &lt;a.b.C.m&gt;</code>`` → ``<code>title</code>`` (an explicit title);
* ``!`` before the target (Sphinx's "no link") is dropped.

A fully qualified ``handrail.…`` target becomes an optional cross-reference of mkdocs-autorefs: a link when
mkdocstrings rendered that object somewhere in the site, plain code otherwise. On a page of the API reference
(``reference/<package>.md``) a relative target is tried under that package (``:class:`Tool``` on the
``handrail.tools`` page: ``handrail.tools.Tool``), again a link only when that object was rendered; other
relative targets (``:meth:`warm_up```) stay plain code. An unresolved reference is left by autorefs as a
``<span title="<the identifier tried>">``; once references are resolved the hook drops that span (the title
would show a guessed path) and its marker class. tools/check_reference.py fails the build check when a raw
role is left anywhere in the site.
"""

from __future__ import annotations

import html
import re
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from mkdocs.plugins import event_priority

if TYPE_CHECKING:
    from mkdocs.structure.pages import Page

ROLES = ("class", "meth", "func", "attr", "mod", "data", "exc", "obj")
RAW_ROLE = re.compile(rf":(?:{'|'.join(ROLES)}):<code>(?P<text>.*?)</code>", re.DOTALL)
_TITLED = re.compile(r"(?P<title>.*?)\s*<(?P<target>[^<>]+)>", re.DOTALL)
# The code of a role this hook rewrote, marked until the cross-references are resolved.
_MARK = 'class="sphinx-role"'
_UNRESOLVED = re.compile(rf'<span title="[^"]*">(<code {_MARK}>.*?</code>)</span>', re.DOTALL)


def _replacement(match: re.Match[str], package: str | None) -> str:
    text = html.unescape(match["text"])
    titled = _TITLED.fullmatch(text)
    title, target = (titled["title"], titled["target"]) if titled else (None, text)
    target = re.sub(r"\s+", "", target)
    no_link = target.startswith("!")
    target = target.lstrip("!")
    short = target.startswith("~")
    target = target.lstrip("~")
    if title is None:
        title = target.rsplit(".", 1)[-1] if short else target
        # A call's parentheses stay on the last part: ``~a.b.f()`` shows ``f()``.
        if short and "." in target and target.endswith("()"):
            title = target.removesuffix("()").rsplit(".", 1)[-1] + "()"
    code = f"<code>{html.escape(title, quote=False)}</code>"
    marked = f"<code {_MARK}>{html.escape(title, quote=False)}</code>"
    identifier = target.removesuffix("()")
    if package and not identifier.startswith("handrail."):
        identifier = f"{package}.{identifier}"
    if no_link or not re.fullmatch(r"handrail(\.\w+)+", identifier):
        return code
    return f'<autoref identifier="{html.escape(identifier)}" optional>{marked}</autoref>'


def rewrite(page_html: str, package: str | None = None) -> str:
    """``page_html`` with each raw role rewritten as code (an optional cross-reference for a handrail name).

    ``package`` is the package a reference page documents: relative targets are tried under it.
    """
    return RAW_ROLE.sub(lambda match: _replacement(match, package), page_html)


def unmark(page_html: str) -> str:
    """``page_html`` once autorefs resolved the references: unresolved ones plain code, the marker class gone."""
    return _UNRESOLVED.sub(r"\1", page_html).replace(f"<code {_MARK}>", "<code>")


def on_page_content(page_html: str, *, page: Page, **kwargs: Any) -> str:
    """The MkDocs event: after a page's Markdown became HTML, before autorefs resolves the cross-references."""
    path = PurePosixPath(page.file.src_uri)
    package = path.stem if path.parent == PurePosixPath("reference") else None
    return rewrite(page_html, package)


@event_priority(50)  # Early: before the search plugin indexes the page's content.
def on_page_context(context: Any, *, page: Page, **kwargs: Any) -> Any:
    """The MkDocs event after autorefs resolved every page's references (its ``on_env``): unmark the roles."""
    if page.content:
        page.content = unmark(page.content)
    return context
