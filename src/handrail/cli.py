"""The ``handrail`` command: run an agent file on a question, print the agent file JSON Schema.

Exit codes: 0 the agent answered; 1 the run failed (model or tool error); 2 bad usage or a bad
agent file; 3 the run ended without an answer (step limit, length, content filter).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from handrail import __version__

__all__ = ["main"]

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_ANSWER = 0, 1, 2, 3
_ANSWERED = ("text",)


class _Printer:
    """Streams the answer text and shows each tool call with its result."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.in_text = False

    def __call__(self, chunk: Any) -> None:
        from rich.text import Text

        if chunk.content:
            self.console.print(chunk.content, end="", markup=False, highlight=False, soft_wrap=True)
            self.in_text = True
        result = chunk.tool_call_result
        if result is not None:
            if self.in_text:
                self.console.print()
                self.in_text = False
            args = result.origin.arguments
            shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else str(args)
            text = result.result if len(result.result) <= 400 else result.result[:400] + " …"
            call = Text("→ ")
            call.append(result.origin.tool_name, style="bold red" if result.error else "bold cyan")
            call.append(f"({shown})")
            self.console.print(call)
            self.console.print(Text("  " + text, style="dim"))


def _generator_override(model: str | None, openai_base_url: str | None, openai_model: str | None) -> Any:
    from handrail.specs import GeneratorSpec, build_generator

    if model is not None and openai_base_url is not None:
        raise click.UsageError("--model and --openai-base-url choose different models; pass only one.")
    if model is not None:
        return build_generator(GeneratorSpec(type="llama_cpp", model=model))
    if openai_base_url is not None:
        import os

        from handrail.components.generators.chat import OpenAIChatGenerator
        from handrail.core.secret import Secret

        key = (
            Secret.from_env_var("OPENAI_API_KEY")
            if os.environ.get("OPENAI_API_KEY")
            else Secret.from_token("no-key-needed-for-local-servers")
        )
        return OpenAIChatGenerator(api_key=key, model=openai_model or "default", api_base_url=openai_base_url)
    return None


def _check_approve(spec: Any, approve: str) -> None:
    from handrail.specs import needs_a_person

    if approve == "ask" and needs_a_person(spec) and not sys.stdin.isatty():
        raise click.UsageError(
            "--approve ask needs a terminal to ask in, and none is attached. "
            "Pass --approve all (run every call) or --approve none (reject calls that need approval)."
        )


def _error(out: Any, message: str) -> None:
    """Print one error line; the message is plain text, never read as rich markup."""
    from rich.text import Text

    line = Text("error: ", style="bold red")
    line.append(message)
    out.print(line)


def _message_json(result: dict[str, Any]) -> dict[str, Any]:
    last = result.get("last_message")
    return {
        "answer": last.text if last is not None else None,
        "exit_reason": result["exit_reason"],
        "step_count": result["step_count"],
        "tool_call_counts": result["tool_call_counts"],
        "token_usage": result["token_usage"],
        "messages": [m.to_dict() for m in result["messages"]],
    }


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="handrail")
def main() -> None:
    """handrail: tool-using LLM agents whose tool calls people can approve, reject or edit."""


@main.command()
@click.argument("agent_file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("question")
@click.option(
    "--model",
    metavar="small|default|PATH",
    help="Use the embedded model: default (Qwen2.5-Coder 1.5B), small (0.5B) or a .gguf file.",
)
@click.option("--openai-base-url", metavar="URL", help="Use an OpenAI-compatible server at URL instead.")
@click.option("--openai-model", metavar="NAME", help="Model name to ask the OpenAI-compatible server for.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (answer, exit reason, history).")
@click.option(
    "--approve",
    type=click.Choice(["ask", "all", "none"]),
    default="ask",
    show_default=True,
    help="Tool calls that need approval: ask in the terminal, run all, or reject them (none).",
)
@click.option("--allow-module", "allow_modules", multiple=True, metavar="PREFIX",
              help="Trust dotted paths under this module prefix in the agent file (repeatable).")  # fmt: skip
@click.option("--max-steps", type=click.IntRange(min=1), help="Override the file's max_agent_steps.")
def run(
    agent_file: Path,
    question: str,
    model: str | None,
    openai_base_url: str | None,
    openai_model: str | None,
    as_json: bool,
    approve: str,
    allow_modules: tuple[str, ...],
    max_steps: int | None,
) -> None:
    """Run AGENT_FILE (YAML) on QUESTION and print the answer as it streams, with each tool call."""
    from rich.console import Console

    out = Console(stderr=as_json, highlight=False, soft_wrap=True)
    if not question.strip():
        raise click.UsageError("QUESTION is empty; ask the agent something.")
    with _errors_as_exit_codes(out, agent_file):
        agent = _build(out, agent_file, model, openai_base_url, openai_model, approve, allow_modules, max_steps)
        from handrail.dataclasses.chat_message import ChatMessage

        printer = None if as_json else _Printer(out)
        result = agent.run([ChatMessage.from_user(question)], streaming_callback=printer)
    _report(out, result, printer, as_json)
    if result["exit_reason"] not in _ANSWERED and result["exit_reason"] not in {t.name for t in spec_tools(agent)}:
        if not as_json:
            out.print(f"The run ended without an answer ({result['exit_reason']}).", style="yellow", markup=False)
        sys.exit(EXIT_NO_ANSWER)


def _build(
    out: Any,
    agent_file: Path,
    model: str | None,
    openai_base_url: str | None,
    openai_model: str | None,
    approve: str,
    allow_modules: tuple[str, ...],
    max_steps: int | None,
) -> Any:
    """Load the agent file, apply the command-line overrides, build and warm up the Agent."""
    from handrail.human_in_the_loop import RichConsoleUI
    from handrail.specs import build_agent, load_agent_spec

    spec = load_agent_spec(agent_file)
    if spec.allowed_modules or allow_modules:
        sys.path.insert(0, str(agent_file.resolve().parent))  # tool modules may sit beside the agent file
    if max_steps is not None:
        spec.max_agent_steps = max_steps
    generator = _generator_override(model, openai_base_url, openai_model)
    _check_approve(spec, approve)
    agent = build_agent(
        spec, base_dir=agent_file.parent, allowed_modules=allow_modules, generator=generator,
        approve=approve,  # type: ignore[arg-type]
        confirmation_ui=RichConsoleUI(console=out) if approve == "ask" else None,
    )  # fmt: skip
    with out.status("Loading the model …", spinner="dots"):
        agent.warm_up()
    return agent


@contextlib.contextmanager
def _errors_as_exit_codes(out: Any, agent_file: Path) -> Iterator[None]:
    """Turn expected failures into one error line and an exit code (see the module docstring)."""
    from handrail.errors import ConfigurationError, HandrailError
    from handrail.specs import SpecError

    try:
        yield
    except click.ClickException:
        raise
    except SpecError as exc:
        _error(out, str(exc) if str(exc).startswith(str(agent_file)) else f"{agent_file}: {exc}")
        sys.exit(EXIT_USAGE)
    except ConfigurationError as exc:
        _error(out, str(exc))
        sys.exit(EXIT_USAGE)
    except ImportError as exc:
        hint = (
            ""
            if "pip install" in str(exc)
            else ". A component needs an optional dependency: pip install 'handrail[local]' for the embedded "
            "model, 'handrail[openai]' for OpenAI-compatible servers."
        )
        _error(out, f"{exc}{hint}")
        sys.exit(EXIT_USAGE)
    except (HandrailError, OSError) as exc:
        _error(out, f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc))
        sys.exit(EXIT_RUN_FAILED)


def _report(out: Any, result: dict[str, Any], printer: _Printer | None, as_json: bool) -> None:
    """Print the answer (unless it was streamed) and a summary line, or the JSON object."""
    if as_json:
        click.echo(json.dumps(_message_json(result), ensure_ascii=False))
        return
    if printer is not None and printer.in_text:
        out.print()
    elif result["exit_reason"] in _ANSWERED and result.get("last_message") is not None:
        out.print(result["last_message"].text or "", markup=False)
    counts = ", ".join(f"{k}×{v}" for k, v in result["tool_call_counts"].items() if v) or "none"
    summary = f"exit: {result['exit_reason']} · steps: {result['step_count']} · tools: {counts}"
    out.print(summary, style="dim", markup=False)


def spec_tools(agent: Any) -> list[Any]:
    """The agent's tools, flattened."""
    from handrail.tools.utils import flatten_tools

    return flatten_tools(agent.tools)


@main.command()
def schema() -> None:
    """Print the JSON Schema of agent files."""
    from handrail.specs import agent_spec_json_schema

    click.echo(json.dumps(agent_spec_json_schema(), indent=2))


if __name__ == "__main__":  # pragma: no cover
    main()
