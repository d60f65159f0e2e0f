"""Run the demo agent (examples/assistant.yaml) on the eval set and score its answers.

The agent is built the way ``handrail run`` builds it (``handrail.specs.load_agent_spec`` + ``build_agent``),
with every tool call approved automatically (``approve="all"``, no console) and the embedded model chosen
with ``--model``, as ``handrail run --model`` does (``handrail.specs._resume.model_generator``). The model is
loaded once; each question is a fresh run (a new conversation).

A question is scored ``ok`` when any number in the final answer lies within the question's tolerance of the
expected value (thousands separators such as ``3,796.30`` are read as one number).

    python bench/model_eval/run_eval.py                      # default model, all questions
    python bench/model_eval/run_eval.py --model small --limit 5
    python bench/model_eval/run_eval.py --only bulbs-and-drill --json results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
AGENT_FILE = REPO / "examples" / "assistant.yaml"
QUESTIONS = HERE / "questions.yaml"

# A number: optional sign, digits with optional thousands separators (comma or thin/normal space), decimals.
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d{1,3}(?:[,\u202f\u00a0]\d{3})+(?:\.\d+)?|(?<![\w.])[-−]?\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Question:
    """One eval question: the wording, the expected number and how far off an answer may be."""

    id: str
    question: str
    expected: float
    tolerance: float
    why: str = ""


@dataclass(slots=True)
class Outcome:
    """What the agent answered to one question, and whether it was right."""

    id: str
    ok: bool
    expected: float
    numbers: list[float]
    answer: str
    exit_reason: str
    steps: int
    tools: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    """The questions of ``path`` (a YAML list of mappings with id, question, expected, tolerance, why)."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Question(**{k: v for k, v in item.items() if k in Question.__slots__}) for item in raw]


def numbers_in(text: str) -> list[float]:
    """Every number written in ``text``, in order (``3,796.30`` → 3796.3; ``−2`` → -2)."""
    found = []
    for match in _NUMBER.finditer(text):
        token = re.sub(r"[,\u202f\u00a0]", "", match.group()).replace("−", "-")
        try:
            found.append(float(token))
        except ValueError:
            continue
    return found


def is_right(numbers: list[float], question: Question) -> bool:
    """Whether any of ``numbers`` is within the question's tolerance of its expected value."""
    slack = question.tolerance + 1e-9
    return any(abs(n - question.expected) <= slack for n in numbers)


def build(model: str, max_steps: int | None) -> Any:
    """The demo agent as ``handrail run examples/assistant.yaml --model MODEL --approve all`` builds it."""
    from handrail.specs import build_agent, load_agent_spec
    from handrail.specs._resume import model_generator

    spec = load_agent_spec(AGENT_FILE)
    if max_steps is not None:
        spec.max_agent_steps = max_steps
    agent = build_agent(spec, base_dir=AGENT_FILE.parent, generator=model_generator(model), approve="all")
    agent.warm_up()
    return agent


def ask(agent: Any, question: Question) -> Outcome:
    """Run the agent on one question and score the final answer."""
    from handrail.dataclasses import ChatMessage

    start = time.perf_counter()
    try:
        result = agent.run([ChatMessage.from_user(question.question)])
    except Exception as exc:  # a failed run is a wrong answer, not the end of the eval
        return Outcome(question.id, False, question.expected, [], "", "error", 0,
                       seconds=time.perf_counter() - start, error=f"{type(exc).__name__}: {exc}")  # fmt: skip
    seconds = time.perf_counter() - start
    last = result.get("last_message")
    answer = (last.text or "") if last is not None else ""
    numbers = numbers_in(answer)
    tools = {name: count for name, count in result.get("tool_call_counts", {}).items() if count}
    return Outcome(
        id=question.id,
        ok=is_right(numbers, question),
        expected=question.expected,
        numbers=numbers,
        answer=answer,
        exit_reason=str(result.get("exit_reason")),
        steps=int(result.get("step_count", 0)),
        tools=tools,
        seconds=seconds,
    )


def excerpt(text: str, width: int = 90) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def commit() -> str:
    """The repository's current commit (short), or ``unknown``."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="small | default | path/to/model.gguf (default: default)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the eval set (YAML)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--only", action="append", metavar="ID", help="only this question (repeatable)")
    parser.add_argument("--max-steps", type=int, help="override the agent file's max_agent_steps")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the results to FILE")
    args = parser.parse_args(argv)

    questions = load_questions(args.questions)
    if args.only:
        unknown = set(args.only) - {q.id for q in questions}
        if unknown:
            parser.error(f"no such question: {', '.join(sorted(unknown))}")
        questions = [q for q in questions if q.id in args.only]
    if args.limit is not None:
        questions = questions[: args.limit]

    load_start = time.perf_counter()
    agent = build(args.model, args.max_steps)
    load_seconds = time.perf_counter() - load_start
    print(f"model {args.model}: loaded in {load_seconds:.1f} s; {len(questions)} questions", flush=True)

    outcomes: list[Outcome] = []
    try:
        for q in questions:
            outcome = ask(agent, q)
            outcomes.append(outcome)
            verdict = "ok   " if outcome.ok else "WRONG"
            tools = ", ".join(f"{k}×{v}" for k, v in outcome.tools.items()) or "none"
            shown = outcome.error or excerpt(outcome.answer) or f"(no answer: {outcome.exit_reason})"
            print(f"{verdict} {q.id:<26} {outcome.seconds:5.1f} s  tools: {tools:<24} expected {q.expected:g}"
                  f"  | {shown}", flush=True)  # fmt: skip
    except KeyboardInterrupt:
        print("interrupted: scoring the questions answered so far", file=sys.stderr)
    finally:
        agent.close()

    right = sum(o.ok for o in outcomes)
    median = statistics.median(o.seconds for o in outcomes) if outcomes else 0.0
    accuracy = right / len(outcomes) if outcomes else 0.0
    print(f"accuracy {right}/{len(outcomes)} = {accuracy:.0%} · median {median:.1f} s/question · "
          f"model {args.model} · commit {commit()}")  # fmt: skip
    if args.json is not None:
        summary = {
            "model": args.model,
            "commit": commit(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": platform.platform(),
            "load_seconds": round(load_seconds, 2),
            "questions": len(outcomes),
            "right": right,
            "accuracy": accuracy,
            "median_seconds": median,
            "results": [asdict(o) for o in outcomes],
        }
        args.json.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
