"""The ``handrail`` command: run an agent file, decide paused tool calls, resume, print the agent file schema.

Exit codes: 0 the agent answered (or a command succeeded); 1 the run failed (model or tool
error, a snapshot being resumed elsewhere); 2 bad usage or bad input (a bad agent file, an
unknown or finished snapshot, a refused decision); 3 the run ended without an answer (step limit,
length, content filter); 4 the run paused for approval (``--pause-for-approval`` / ``resume``: the
snapshot id is printed).
"""

from __future__ import annotations

import json

import click

from handrail import __version__
from handrail.cli._approvals import approvals
from handrail.cli._run import resume, run

__all__ = ["main"]

_EPILOG = (
    "Exit codes: 0 answered / done; 1 the run failed; 2 bad usage or input; "
    "3 the run ended without an answer; 4 paused for approval (see 'handrail approvals --help')."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.version_option(__version__, prog_name="handrail")
def main() -> None:
    """handrail: tool-using LLM agents whose tool calls people can approve, reject or edit."""


@main.command()
def schema() -> None:
    """Print the JSON Schema of agent files."""
    from handrail.specs import agent_spec_json_schema

    click.echo(json.dumps(agent_spec_json_schema(), indent=2))


main.add_command(run)
main.add_command(resume)
main.add_command(approvals)
