"""What the spans say about a run's chat generator, a reply's usage and an approval decision (plain data, no OTel)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from handrail.components._observed_words import KNOWN_GENERATORS, model_name
from handrail.tracing import _conventions as c

__all__ = ["Model", "args_digest", "describe_model", "request_attributes", "response_attributes", "usage_attributes"]

_KNOWN = KNOWN_GENERATORS


@dataclass(frozen=True, slots=True)
class Model:
    """The chat generator as the spans name it."""

    provider: str
    """``gen_ai.provider.name``: the generator's ``provider_name`` attribute, a known generator's, or its class."""
    model: str | None
    """``gen_ai.request.model``: its ``model_name`` or ``model`` (a str), or a known generator's default."""
    in_process: bool
    """True for a model run in this process (the embedded llama.cpp model): its chat span is INTERNAL."""
    server: tuple[str, int | None] | None = None
    """``server.address`` / ``server.port`` of its ``api_base_url`` (the host only: never a user or password)."""
    request: tuple[tuple[str, Any], ...] = ()
    """Request attributes from its ``generation_kwargs`` (temperature, max tokens)."""


def describe_model(generator: Any) -> Model:
    """How the spans of a run name its chat generator (read once per run; never calls it)."""
    kind = type(generator)
    known = _KNOWN.get(f"{kind.__module__}.{kind.__qualname__}")
    own = getattr(generator, "provider_name", None)
    provider = own if isinstance(own, str) and own else known[0] if known else kind.__name__
    model = model_name(generator)
    return Model(provider, model, bool(known and known[2]), _server(getattr(generator, "api_base_url", None)),
                 _request(getattr(generator, "generation_kwargs", None)))  # fmt: skip


def _server(url: Any) -> tuple[str, int | None] | None:
    if not isinstance(url, str) or not url:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    return (host, port) if host else None


def _request(kwargs: Any) -> tuple[tuple[str, Any], ...]:
    if not isinstance(kwargs, Mapping):
        return ()
    out: list[tuple[str, Any]] = []
    temperature = kwargs.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        out.append((c.GEN_AI_REQUEST_TEMPERATURE, float(temperature)))
    tokens = kwargs.get("max_tokens", kwargs.get("max_completion_tokens"))
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        out.append((c.GEN_AI_REQUEST_MAX_TOKENS, tokens))
    return tuple(out)


def request_attributes(model: Model, streaming: bool, step: int) -> dict[str, Any]:
    """A ``chat`` span's attributes at its start (the sampling-relevant ones among them)."""
    attributes: dict[str, Any] = {
        c.GEN_AI_OPERATION_NAME: c.OP_CHAT,
        c.GEN_AI_PROVIDER_NAME: model.provider,
        c.GEN_AI_REQUEST_STREAM: streaming,
        c.HANDRAIL_STEP: step,
        **dict(model.request),
    }
    if model.model:
        attributes[c.GEN_AI_REQUEST_MODEL] = model.model
    if model.server is not None:
        attributes[c.SERVER_ADDRESS] = model.server[0]
        if model.server[1] is not None:
            attributes[c.SERVER_PORT] = model.server[1]
    return attributes


def response_attributes(replies: Sequence[Any]) -> dict[str, Any]:
    """What a ``chat`` span says of the replies: finish reasons, and the response's model and id when known."""
    metas = [r.meta or {} for r in replies]
    attributes: dict[str, Any] = {}
    reasons = [str(m["finish_reason"]) for m in metas if m.get("finish_reason")]
    if reasons:
        attributes[c.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
    for key, attribute in (("model", c.GEN_AI_RESPONSE_MODEL), ("id", c.GEN_AI_RESPONSE_ID)):
        found = next((m[key] for m in metas if isinstance(m.get(key), str) and m[key]), None)
        if found is not None:
            attributes[attribute] = found
    return attributes


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _nested(usage: Mapping[str, Any], outer: str, inner: str) -> int | None:
    details = usage.get(outer)
    return _int(details.get(inner)) if isinstance(details, Mapping) else None


def usage_attributes(replies: Iterable[Any]) -> dict[str, int]:
    """The ``gen_ai.usage.*`` of a model call: its replies' ``meta["usage"]`` (OpenAI's names or the GenAI ones).

    A call with several replies (choices) carries the usage once per reply: the largest counts are taken.
    """
    found: dict[str, int] = {}
    for reply in replies:
        usage = (getattr(reply, "meta", None) or {}).get("usage")
        if not isinstance(usage, Mapping):
            continue
        values = {
            c.GEN_AI_USAGE_INPUT_TOKENS: _int(usage.get("prompt_tokens", usage.get("input_tokens"))),
            c.GEN_AI_USAGE_OUTPUT_TOKENS: _int(usage.get("completion_tokens", usage.get("output_tokens"))),
            c.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: _nested(usage, "prompt_tokens_details", "cached_tokens"),
            c.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: _nested(usage, "completion_tokens_details", "reasoning_tokens"),
        }
        for key, value in values.items():
            if value is not None:
                found[key] = max(found.get(key, 0), value)
    return found


def args_digest(arguments: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of a call's arguments (sorted keys, no spaces): names, never shows."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
