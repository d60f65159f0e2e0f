"""``handrail run`` and ``handrail resume``: run an agent file, pause for approval, continue a paused run."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from handrail.cli._common import (
    EXIT_NO_ANSWER,
    EXIT_PAUSED,
    EXIT_RUN_FAILED,
    agent_file_note,
    call_line,
    echo_json,
    error,
    errors_as_exit_codes,
    fail_busy,
    fail_usage,
    json_errors,
    printable,
    quote,
    reported,
    resume_command,
)
from handrail.cli._interrupt import interrupts
from handrail.cli._live import RunView
from handrail.cli._stores import Where, opened, where_options
from handrail.cli._temporal import parse_address
from handrail.cli._verbose import run_logs, verbose_options
from handrail.core._urls import url_without_password

__all__ = ["resume", "run"]

_ANSWERED = ("text",)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The command line's choice of model (all None: the agent file's generator)."""

    model: str | None = None
    openai_base_url: str | None = None
    openai_model: str | None = None

    def as_metadata(self) -> dict[str, str]:
        """The settings given, for a snapshot's metadata (so ``handrail resume`` uses the same model).

        A password in the base URL is left out (no secret in a snapshot): ``handrail resume`` then needs the URL again.
        """
        url = None if self.openai_base_url is None else url_without_password(self.openai_base_url)
        return {k: v for k, v in (("model", self.model), ("openai_base_url", url),
                                  ("openai_model", self.openai_model)) if v is not None}  # fmt: skip

    def generator(self) -> Any:
        """The generator to use instead of the agent file's, or None."""
        from handrail.specs._resume import model_generator

        if self.model is not None and self.openai_base_url is not None:
            raise click.UsageError("--model and --openai-base-url choose different models; pass only one.")
        return model_generator(self.model, self.openai_base_url, self.openai_model)


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """How to build the Agent from its file."""

    approve: str
    allow_modules: tuple[str, ...]
    max_steps: int | None
    models: ModelChoice
    pause: Where | None = None
    """With ``approve="pause"``: the snapshot store paused runs write to."""
    allow_commands: tuple[str, ...] = ()
    """Programs the file's stdio MCP servers may run besides those it allows (``--allow-command``)."""


def _model_options(command: Any) -> Any:
    for option in reversed([
        click.option("--model", metavar="small|default|PATH",
                     help="Use the embedded model: default (Qwen2.5-Coder 1.5B), small (0.5B) or a .gguf file."),
        click.option("--openai-base-url", metavar="URL", help="Use an OpenAI-compatible server at URL instead."),
        click.option("--openai-model", metavar="NAME", help="Model name to ask the OpenAI-compatible server for."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object (answer, exit reason, messages)."),
        click.option("--allow-module", "allow_modules", multiple=True, metavar="PREFIX",
                     help="Trust dotted paths under this module prefix in the agent file (repeatable)."),
        click.option("--allow-command", "allow_commands", multiple=True, metavar="NAME",
                     help="Let the agent file's stdio MCP servers run this command, exactly as the file writes it "
                          "(repeatable)."),
        click.option("--max-steps", type=click.IntRange(min=1), help="Override the file's max_agent_steps."),
    ]):  # fmt: skip
        command = option(command)
    return command


def _check_approve(spec: Any, approve: str) -> None:
    from handrail.specs import needs_a_person

    if approve == "ask" and needs_a_person(spec) and not sys.stdin.isatty():
        raise click.UsageError(
            "--approve ask needs a terminal to ask in, and none is attached. Pass --approve all (run every "
            "call), --approve none (reject calls that need approval) or --pause-for-approval DIR (decide later)."
        )


def _build(out: Any, agent_file: Path, options: BuildOptions, view: RunView | None = None) -> Any:
    """Load the agent file, apply the command-line overrides, build and warm up the Agent.

    With ``--approve ask`` the console prompt (:class:`RunConsoleUI`) takes ``view``'s spinner away before asking.
    """
    from handrail.cli._console_ui import RunConsoleUI
    from handrail.specs import build_agent, load_agent_spec

    spec = load_agent_spec(agent_file)
    if spec.allowed_modules or options.allow_modules:
        sys.path.insert(0, str(agent_file.resolve().parent))  # tool modules may sit beside the agent file
    if options.max_steps is not None:
        spec.max_agent_steps = options.max_steps
    generator = options.models.generator()
    _check_approve(spec, options.approve)
    pause: dict[str, Any] = {}
    if options.pause is not None:
        metadata: dict[str, Any] = {"agent_file": str(agent_file.resolve())}
        if options.models.as_metadata():
            metadata["generator"] = options.models.as_metadata()
        pause = {"snapshot_store": options.pause.store, "snapshot_metadata": metadata}
    agent = build_agent(
        spec, base_dir=agent_file.parent, allowed_modules=options.allow_modules, generator=generator,
        allowed_commands=options.allow_commands, approve=options.approve,  # type: ignore[arg-type]
        confirmation_ui=RunConsoleUI(out, agent_file, view.hide if view is not None else lambda: None)
        if options.approve == "ask" else None, **pause,
    )  # fmt: skip
    with out.status("Loading the model …", spinner="dots"):
        try:
            agent.warm_up()  # connects to the MCP servers too
        except BaseException:
            agent.close()  # a server started before another one failed: end its process
            raise
    return agent


def _message_json(result: dict[str, Any], view: RunView) -> dict[str, Any]:
    last = result.get("last_message")
    rejected: dict[str, int] = {}
    for tool, _ in view.rejected.values():
        rejected[tool] = rejected.get(tool, 0) + 1
    return {
        "answer": last.text if last is not None else None,
        "exit_reason": result["exit_reason"],
        "step_count": result["step_count"],
        "tool_call_counts": result["tool_call_counts"],
        "rejected_tool_call_counts": rejected,
        "token_usage": result["token_usage"],
        "messages": [m.to_dict() for m in result["messages"]],
    }


def _report(out: Any, result: dict[str, Any], view: RunView, as_json: bool) -> None:
    """Print the answer (unless it was streamed) and a summary line, or the JSON object.

    The summary counts every call the model made, rejected ones too (``search×2 (1 rejected)``); when
    ``--approve none`` refused calls, a last line says so: the answer was written without their results.
    """
    view.hide()
    if as_json:
        echo_json(_message_json(result, view))
        return
    if view.in_text:
        out.print()
    elif result["exit_reason"] in _ANSWERED and result.get("last_message") is not None:
        out.print(printable(result["last_message"].text or "", keep_newlines=True), markup=False)
    counts = view.counts(result["tool_call_counts"])
    summary = f"exit: {printable(result['exit_reason'])} · steps: {result['step_count']} · tools: {counts}"
    out.print(summary, style="dim", markup=False)
    refused = view.refused_by_approve_none()
    if refused:
        tools = ", ".join(sorted({printable(t) for t in refused}))
        calls = "1 call" if len(refused) == 1 else f"{len(refused)} calls"
        ran = "it did not run" if len(refused) == 1 else "none of them ran"
        out.print(f"--approve none refused {calls} ({tools}): {ran}, whatever the answer above says.",
                  style="bold yellow", markup=False)  # fmt: skip


def _finish(out: Any, agent: Any, result: dict[str, Any], view: RunView, as_json: bool) -> None:
    _report(out, result, view, as_json)
    # An exit tool's name is one of the exit conditions (the agent is closed by now: its MCP tools are not listed).
    if result["exit_reason"] not in _ANSWERED and result["exit_reason"] not in agent.exit_conditions:
        if not as_json:
            out.print(f"The run ended without an answer ({printable(result['exit_reason'])}).", style="yellow",
                      markup=False)  # fmt: skip
        sys.exit(EXIT_NO_ANSWER)


def _streamed(
    out: Any, where: Where | None, as_json: bool, view: RunView, start: Callable[[RunView | None], dict[str, Any]]
) -> dict[str, Any]:
    """Run ``start(callback)`` with the answer streamed to ``out`` by ``view`` (no callback with ``--json``).

    Returns:
        The run's result.

    Raises:
        SystemExit: With :data:`EXIT_PAUSED` after reporting a pause for approval.
    """
    from handrail.dataclasses.breakpoints import BreakpointException

    printer = None if as_json else view
    try:
        return start(printer)
    except BreakpointException as exc:
        assert where is not None  # only a pausing strategy pauses a run started from the command line
        view.hide()
        _paused(out, exc, where, printer, as_json)
        sys.exit(EXIT_PAUSED)
    except BaseException as exc:
        view.hide()
        if printer is not None:
            printer.end_text()  # an error line must not continue half a line of streamed text
        if not isinstance(exc, Exception) or reported(exc) is not None:
            raise  # errors_as_exit_codes reports these
        # Code the agent file names (a generator class under allowed_modules) raised: the run failed.
        error(out, f"The run failed: {type(exc).__name__}: {exc}", type(exc).__name__)
        sys.exit(EXIT_RUN_FAILED)


def _paused(out: Any, exc: Any, where: Where, printer: RunView | None, as_json: bool) -> None:
    """Report a pause (the snapshot id, the calls waiting, the commands to decide and resume)."""
    from handrail.human_in_the_loop.snapshots import awaiting_decision

    if printer is not None:
        printer.end_text()
    snapshot = exc.snapshot
    location = exc.snapshot_file_path or (snapshot.location if snapshot is not None else None)
    waiting = awaiting_decision(snapshot) if snapshot is not None else []
    snapshot_id = snapshot.snapshot_id if snapshot is not None else None
    if as_json:
        echo_json({
            "answer": None, "exit_reason": "paused_for_approval", "snapshot_id": snapshot_id,
            "snapshot_file": location if where.files else None, "location": location,
            "store": where.value,
            "pending_tool_calls": [c.to_dict() for c in waiting],
            "step_count": snapshot.step_count if snapshot is not None else None,
            "messages": [m.to_dict() for m in snapshot.messages] if snapshot is not None else [],
        })  # fmt: skip
        return
    out.print(f"Paused for approval: snapshot {printable(snapshot_id)} in {where.label}", style="bold yellow",
              markup=False)  # fmt: skip
    for call in waiting:
        out.print(call_line(call.id, call.tool_name, call.arguments))
    command_args = f"{quote(snapshot_id or '?')} {where.arg}"
    several = len(waiting) > 1
    choose = f" --call {quote(waiting[0].id or '?')}" if several else ""
    out.print("Decide, then resume:", markup=False)
    for command in (
        f"handrail approvals approve {command_args}{choose}",
        f"handrail approvals reject {command_args}{choose} --feedback 'why not'",
        resume_command(snapshot, where) if snapshot is not None else f"handrail resume {command_args}",
    ):
        out.print(f"  {command}", style="dim", markup=False, soft_wrap=True)
    note = agent_file_note(snapshot, where) if snapshot is not None else ""
    if note:
        out.print(note.strip(), style="dim", markup=False)


@click.command()
@click.argument("agent_file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("question")
@click.option(
    "--approve",
    type=click.Choice(["ask", "all", "none"]),
    default="ask",
    show_default=True,
    help="Tool calls that need approval: ask in the terminal (y, n, m, or a: allow the tool for the rest of the "
    "run), run all, or reject them (none).",
)
@click.option("--pause-for-approval", "pause_to", metavar="DIR|URL",
              help="Instead of asking, pause: write a snapshot to the directory DIR or the store URL "
                   "(sqlite:///PATH, postgresql://...), print its id and exit with code 4; decide with "
                   "'handrail approvals', continue with 'handrail resume'.")  # fmt: skip
@click.option("--record", "record", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Record the run to FILE, a new recording (a recording there is overwritten, another file "
                   "refused), to replay it with "
                   "'handrail replay FILE': JSON Lines of every model call, tool call and decision. Masked in it: "
                   "the secret values handrail resolved, what the agent's RedactionHook masks, and what "
                   "RedactionHook's default patterns match (sk-... keys, Bearer tokens, AWS, GitHub and Slack "
                   "tokens, api_key=...). 'handrail resume --record FILE' appends the resumed run.")  # fmt: skip
@click.option("--temporal", "address", metavar="HOST:PORT", callback=parse_address,
              help="Start the run on Temporal instead (needs --task-queue and --store): the workers of the "
                   "queue run agent NAME, AGENT_FILE's stem (they must have NAME.yaml).")  # fmt: skip
@click.option("--task-queue", metavar="QUEUE", help="With --temporal: the queue the workers serve.")
@click.option("--namespace", metavar="NS", help="With --temporal: the Temporal namespace  [default: default].")
@click.option("--store", "store_url", metavar="URL", help="With --temporal: the ledger the workers use "
              "(sqlite:///PATH or postgresql://...).")  # fmt: skip
@click.option("--detach", is_flag=True, help="With --temporal: print the run id and exit (0) without waiting.")
@click.option("--run-id", metavar="ID", help="With --temporal: the run's id (default: a new one; an id is used "
              "once).")  # fmt: skip
@_model_options
@verbose_options
@click.pass_context
def run(
    ctx: click.Context,
    agent_file: Path,
    question: str,
    approve: str,
    pause_to: str | None,
    record: Path | None,
    address: str | None,
    task_queue: str | None,
    namespace: str | None,
    store_url: str | None,
    detach: bool,
    run_id: str | None,
    model: str | None,
    openai_base_url: str | None,
    openai_model: str | None,
    as_json: bool,
    allow_modules: tuple[str, ...],
    allow_commands: tuple[str, ...],
    max_steps: int | None,
    verbose: int,
    log_json: bool,
) -> None:
    """Run AGENT_FILE (YAML) on QUESTION and print the answer as it streams, with each tool call.

    A call that ran is shown '→ tool(arguments)' with its result, a rejected one '✗ tool(arguments) rejected:
    why'; the summary counts both (tools: search×2 (1 rejected)). On a terminal a spinner line says the step
    and what the model is doing (reading the prompt, choosing a tool, writing the answer). --approve ask asks
    y, n, m, or a: run this tool without asking for the rest of the run. --approve none exits 0 when the
    model answered, and its last line says how many calls it refused. Ctrl-C says what it interrupted and,
    for a run with --pause-for-approval, the command that continues it (exit 130).

    With --temporal HOST:PORT --task-queue QUEUE --store URL the run is durable, on the workers of the queue
    ('handrail worker --temporal'): its id is printed on stderr (on stdout with --detach, which exits at
    once). The command waits for the answer; each call that waits for a decision is asked here when stdin is a
    terminal (the decisions its policy allows, or wait to leave it to others), else the 'handrail runs decide'
    commands are printed and it keeps waiting. Ctrl-C stops waiting, not the run (exit 130). The worker's
    agent file chooses the model and the approvals: --approve, --pause-for-approval, --model, --openai-*,
    --max-steps, --allow-module and --allow-command do not apply.
    """
    from rich.console import Console

    out = Console(stderr=as_json, highlight=False, soft_wrap=True)
    ctx.with_resource(run_logs(verbose, log_json))  # -v: the run's log records on stderr, until the command ends
    ctx.with_resource(json_errors(as_json))  # --json: errors are JSON objects on stdout too
    if not question.strip():
        raise click.UsageError("QUESTION is empty; ask the agent something.")
    if address is not None:
        _run_on_temporal(ctx, agent_file, question, address, task_queue, namespace, store_url, detach, run_id,
                         as_json)  # fmt: skip
        return
    for flag, name in (("--task-queue", "task_queue"), ("--namespace", "namespace"), ("--store", "store_url"),
                       ("--detach", "detach"), ("--run-id", "run_id")):  # fmt: skip
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(f"{flag} goes with --temporal HOST:PORT (a run on Temporal).", ctx)
    if pause_to is not None and ctx.get_parameter_source("approve") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--approve and --pause-for-approval are different ways to approve; pass only one.")
    models = ModelChoice(model, openai_base_url, openai_model)
    view = RunView(out, spinner=out.is_terminal and not as_json)
    with contextlib.ExitStack() as stack:
        where: Where | None = None
        if pause_to is not None:
            where = stack.enter_context(opened(out, None, pause_to, allow_modules, create=True,
                                               flag="--pause-for-approval"))  # fmt: skip
        options = BuildOptions("pause" if where is not None else approve, allow_modules, max_steps, models, where,
                               allow_commands)  # fmt: skip
        record_id = lambda: view.run_info.durable_id if view.run_info is not None else None  # noqa: E731
        with interrupts(out, view, as_json, where, record_id), errors_as_exit_codes(out, agent_file):
            agent = _build(out, agent_file, options, view)
            from handrail.dataclasses.chat_message import ChatMessage

            recorder = _recorder(record, agent_file, options)
            with _closing(agent):
                result = _streamed(out, where, as_json, view, lambda printer: agent.run(
                    [ChatMessage.from_user(question)], printer, recorder=recorder, observers=[view]))  # fmt: skip
    _finish(out, agent, result, view, as_json)


def _recorder(record: Path | None, agent_file: Path, options: BuildOptions, *, append: bool = False) -> Any:
    """The Recorder of ``--record FILE`` (its header names the agent file and the options), or None.

    ``run`` starts a new recording (``append`` False: FILE is overwritten); ``resume`` appends to a recording.
    The default redaction applies (the header says ``"redaction": ["default"]``, which the replay applies too).
    """
    if record is None:
        return None
    from handrail.cli._replay import recording_metadata
    from handrail.tracing.recording import Recorder

    metadata = recording_metadata(agent_file, options.approve, options.max_steps, options.allow_modules)
    return Recorder(record, append=append, metadata=metadata)


@contextlib.contextmanager
def _closing(agent: Any) -> Iterator[None]:
    """Close the agent when its run ends, however it ends: its MCP servers' connections and processes end.

    A failure to close is reported on stderr; it does not change the run's outcome (its answer is printed).
    """
    try:
        yield
    finally:
        try:
            agent.close()
        except Exception as exc:  # the run's result stands; say what could not be closed
            click.echo(f"handrail: closing the agent failed: {type(exc).__name__}: {exc}", err=True)


_LOCAL_ONLY = (("--approve", "approve"), ("--pause-for-approval", "pause_to"), ("--model", "model"),
               ("--openai-base-url", "openai_base_url"), ("--openai-model", "openai_model"),
               ("--allow-module", "allow_modules"), ("--allow-command", "allow_commands"),
               ("--max-steps", "max_steps"), ("--record", "record"))  # fmt: skip


def _run_on_temporal(ctx: click.Context, agent_file: Path, question: str, address: str, task_queue: str | None,
                     namespace: str | None, store_url: str | None, detach: bool, run_id: str | None,
                     as_json: bool) -> None:  # fmt: skip
    from handrail.cli._temporal import Target
    from handrail.cli._temporal_runs import start_temporal_run

    for flag, name in _LOCAL_ONLY:
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(f"{flag} does not apply with --temporal: the worker's agent file ({agent_file.stem}"
                                   f".yaml there) chooses the model and the approvals.", ctx)  # fmt: skip
    if task_queue is None:
        raise click.UsageError("--temporal needs --task-queue QUEUE (the queue the workers serve).", ctx)
    if store_url is None:
        raise click.UsageError("--temporal needs --store URL: the ledger the workers use (large payloads are kept "
                               "there by reference).", ctx)  # fmt: skip
    start_temporal_run(Target(address, namespace or "default", store_url), task_queue, agent_file, question,
                       detach=detach, run_id=run_id, as_json=as_json)  # fmt: skip


def _resume_models(metadata: dict[str, Any], given: ModelChoice) -> ModelChoice:
    """The command line's model choice, else the one recorded by the run that paused."""
    from handrail.specs._resume import recorded_models

    if given.as_metadata():
        return given
    return ModelChoice(**recorded_models(metadata))


def _resume_agent_file(out: Any, snapshot: Any, agent: Path | None) -> Path:
    if agent is not None:
        return agent
    recorded = snapshot.metadata.get("agent_file")
    if not isinstance(recorded, str) or not recorded:
        fail_usage(out, f"Snapshot {printable(snapshot.snapshot_id)} does not record its agent file; pass --agent "
                        f"AGENT.yaml.")  # fmt: skip
    path = Path(recorded)
    if not path.is_file():
        fail_usage(out, f"The agent file recorded in snapshot {printable(snapshot.snapshot_id)} is gone ({path}); "
                        f"pass --agent AGENT.yaml.")  # fmt: skip
    return path


@click.command()
@click.argument("snapshot_id")
@where_options
@click.option("--agent", "agent_option", type=click.Path(dir_okay=False, path_type=Path),
              help="The agent file (default: the one recorded in the snapshot by 'handrail run').")  # fmt: skip
@click.option("--unknown-outcome", type=click.Choice(["retry", "fail"]),
              help="A call found running (its process died mid-call): run it again or record it failed.")  # fmt: skip
@click.option("--allow-drift", is_flag=True, help="Resume even though the agent's definition changed.")
@click.option("--record", "record", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Record the resumed run to FILE: appended to the recording there (of the run that paused), "
                   "or a new one; a FILE that is not a recording is refused. Masked as with 'handrail run "
                   "--record'.")  # fmt: skip
@_model_options
@verbose_options
def resume(
    snapshot_id: str,
    directory: Path | None,
    store_url: str | None,
    agent_option: Path | None,
    unknown_outcome: str | None,
    allow_drift: bool,
    record: Path | None,
    model: str | None,
    openai_base_url: str | None,
    openai_model: str | None,
    as_json: bool,
    allow_modules: tuple[str, ...],
    allow_commands: tuple[str, ...],
    max_steps: int | None,
    verbose: int,
    log_json: bool,
) -> None:
    """Continue the paused run SNAPSHOT_ID of --dir or --store with the decisions recorded in it.

    Calls still without a decision pause the run again into the same store (exit code 4, a new snapshot id).
    A run the service started keeps its record current (what GET /api/v1/runs/ID shows): running, then paused
    or finished; while a 'handrail serve' or 'handrail worker' process continues it, exit code 5. Ctrl-C says
    what it interrupted and the command that continues the run (exit 130).
    """
    from rich.console import Console

    out = Console(stderr=as_json, highlight=False, soft_wrap=True)
    click.get_current_context().with_resource(run_logs(verbose, log_json))
    click.get_current_context().with_resource(json_errors(as_json))  # --json: errors are JSON objects on stdout too
    with opened(out, directory, store_url, allow_modules) as where:
        _resume(out, where, snapshot_id, agent_option, unknown_outcome, allow_drift,
                ModelChoice(model, openai_base_url, openai_model), as_json, (allow_modules, allow_commands),
                max_steps, record)  # fmt: skip


def _resume(
    out: Any,
    where: Where,
    snapshot_id: str,
    agent_option: Path | None,
    unknown_outcome: str | None,
    allow_drift: bool,
    given: ModelChoice,
    as_json: bool,
    allowed: tuple[tuple[str, ...], tuple[str, ...]],
    max_steps: int | None,
    record: Path | None = None,
) -> None:
    from handrail.human_in_the_loop.snapshots import awaiting_decision
    from handrail.stores._snapshot_common import unavailable_error

    with errors_as_exit_codes(out, agent_option):
        found = where.find(out, snapshot_id)
    with errors_as_exit_codes(out, agent_option, busy=where.busy(found)):
        snapshot = where.store.load(found)
        state = where.state(snapshot)
        if state == "running":
            fail_busy(out, f"Snapshot {printable(snapshot.snapshot_id)} is held by a running process right now (a "
                           f"resume in progress, or a cancelled run whose tool call is still finishing); try again "
                           f"when that run has paused or finished.")  # fmt: skip
        ended = unavailable_error(snapshot) if snapshot.status in ("done", "resumed") else None
        if ended is not None:  # SnapshotFinishedError / SnapshotResumedError, as the library raises: exit code 2
            raise ended
        agent_file = _resume_agent_file(out, snapshot, agent_option)
        if not as_json:
            if state == "interrupted":
                out.print(f"Snapshot {printable(snapshot.snapshot_id)} was interrupted (its run stopped without "
                          f"pausing or finishing); continuing it.", style="yellow", markup=False)  # fmt: skip
            if agent_option is None:
                out.print(f"Agent file: {printable(agent_file)} (recorded in the snapshot)", style="dim", markup=False)
    options = BuildOptions("pause", allowed[0], max_steps, _resume_models(snapshot.metadata, given), where, allowed[1])
    from handrail.server._by_hand import resume_recorded, run_held
    from handrail.specs._resume import resume as resume_run

    held = where.busy(found)  # the snapshot's claim, or its service run's (a resumer continuing it)
    view = RunView(out, spinner=out.is_terminal and not as_json,
                   step=snapshot.component_visits.get("chat_generator", 0), rejected=_rejected(snapshot))  # fmt: skip
    with (
        interrupts(out, view, as_json, where, lambda: found),
        errors_as_exit_codes(out, agent_file, busy=lambda: held() or run_held(where.store, snapshot.run_id)),
    ):
        agent = _build(out, agent_file, options)
        undecided = [printable(c.id) for c in awaiting_decision(snapshot)]
        if undecided and not as_json:
            out.print(f"Calls without a decision ({', '.join(undecided)}) will pause the run again.",
                      style="yellow", markup=False)  # fmt: skip

        recorder = _recorder(record, agent_file, options, append=True)
        observers = [view, recorder] if recorder is not None else [view]

        def resumed(printer: RunView | None) -> dict[str, Any]:  # a service run's record follows, under its claim
            return resume_recorded(where.store, snapshot, lambda: resume_run(
                found, store=where.store, agent=agent, streaming_callback=printer, allow_drift=allow_drift,
                unknown_outcome=unknown_outcome, observers=observers))  # fmt: skip

        with _closing(agent):
            result = _streamed(out, where, as_json, view, resumed)
    _finish(out, agent, result, view, as_json)


def _rejected(snapshot: Any) -> dict[str, tuple[str, Any]]:
    """The calls of the resumed step its ledger records as rejected: ``{call id: (tool, decision)}``."""
    return {call_id: (entry.tool_name, entry.decision) for call_id, entry in snapshot.ledger.items()
            if entry.status == "rejected" and entry.decision is not None}  # fmt: skip
