"""The OpenAI wire format of ``hy-eval serve``: request bodies read into our
:class:`Request`, answers and errors written as OpenAI writes them (pure functions).

A chat request maps onto ``Request`` so that the provider behind the server asks for
structured output in a mode it takes (``_structured.py``): ``response_format``
``json_schema`` (or llama-cpp-python's ``json_object`` with a ``schema``) becomes the
request's schema; ``json_object`` becomes the schema ``{"type": "object"}``; one tool
to call (named by ``tool_choice``, or the only tool with ``tool_choice`` ``auto`` or
``required``) becomes the schema of its parameters, and the answer goes back as that
tool's call. A field that would change the answer and that we cannot honour is refused
(400), never dropped in silence, except the sampling fields of :data:`FORWARDED`, which
go to an ``openai`` provider and are named in a response header for the others. Every value
is checked against its range first (a 400 naming the field) and normalised (numbers as
floats, ``-0.0`` as ``0.0``), so that two requests that mean the same share a cache key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hy_eval._json import JsonTextError, loads_untrusted
from hy_eval._numbers import is_integer
from hy_eval.llm.core import Completion, Request, short_text
from hy_eval.llm.serve._embed import DEFAULT_DIMENSIONS, EMBEDDING_MODEL, MAX_DIMENSIONS

#: ``max_tokens`` of a request that names none (``Request``'s own default).
DEFAULT_MAX_TOKENS = 1024
#: The most ``max_tokens`` a request may ask for: far above any model's context, far
#: below a number no provider takes (10^30 was forwarded as it was).
MAX_TOKENS_LIMIT = 1_000_000
#: A ``seed`` is a signed 64-bit integer (OpenAI's type; a larger one is no seed).
SEED_RANGE = (-(2**63), 2**63 - 1)
#: The most ``stop`` sequences (OpenAI's limit).
MAX_STOP = 4
#: Fields that change nothing in the answer: accepted and dropped.
IGNORED: frozenset[str] = frozenset(
    {
        "user",
        "metadata",
        "store",
        "parallel_tool_calls",
        "stream_options",
        "service_tier",
        "prompt_cache_key",
        "safety_identifier",
    }
)
#: Sampling fields sent on to an ``openai`` provider in the request body (and so in the
#: cache key); the other providers' requests have no place for them.
FORWARDED: frozenset[str] = frozenset(
    {"top_p", "stop", "presence_penalty", "frequency_penalty", "logit_bias"}
)
_CHAT_FIELDS: frozenset[str] = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "n",
        "stream",
        "logprobs",
        "response_format",
        "tools",
        "tool_choice",
    }
)
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
#: The most inputs of one embeddings request (OpenAI's limit).
MAX_EMBEDDING_INPUTS = 2048


class WireError(Exception):
    """A request we answer with an OpenAI-style error: ``status`` and the error object."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        return error_object(str(self), self.kind, self.code, self.param)


def error_object(
    message: str, kind: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _bad(message: str, param: str | None = None, code: str | None = None) -> WireError:
    return WireError(400, message, param=param, code=code)


def read_json_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object; a 400 for anything else (invalid JSON, text
    that is not UTF-8, nesting too deep, lone surrogates)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("the request body is not UTF-8 text") from None
    try:
        value = loads_untrusted(text, unique_keys=False)
    except JsonTextError as exc:
        raise _bad(f"the request body is not valid JSON: {exc.problem}") from None
    if not isinstance(value, dict):
        raise _bad("the request body must be a JSON object")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_model(body: Mapping[str, Any], served: tuple[str, ...]) -> str:
    """The request's ``model``, which must be one this server serves (404 otherwise)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("you must provide a model parameter", "model")
    if model not in served:
        raise WireError(
            404,
            f"The model {short_text(model, 80)!r} does not exist on this server; "
            f"it serves {', '.join(repr(m) for m in served)}",
            code="model_not_found",
            param="model",
        )
    return model


# ---- chat completions -------------------------------------------------------------------


@dataclass(frozen=True)
class ChatCall:
    """A chat request read into our terms. ``tool`` is the function whose call the answer
    is (else the answer is the message's content); ``dropped`` lists the fields the
    provider behind the server could not take."""

    request: Request
    tool: str | None = None
    dropped: tuple[str, ...] = field(default_factory=tuple)


def read_chat(body: Mapping[str, Any], *, provider: str, default_temperature: float) -> ChatCall:
    """``body`` (a chat-completions request) as a :class:`ChatCall` for a provider named
    ``provider``. Raises :class:`WireError` (400) for what it cannot honour. The model
    is checked apart (:func:`check_model`)."""
    if body.get("stream"):
        raise _bad(
            "streaming is not supported by hy-eval serve; send the request with stream false",
            "stream",
            "unsupported_parameter",
        )
    unknown = sorted(set(body) - _CHAT_FIELDS - IGNORED - FORWARDED)
    if unknown:
        raise _bad(
            f"unsupported parameter {short_text(unknown[0], 60)!r} (hy-eval serve refuses "
            "fields that would change the answer and that it cannot honour)",
            unknown[0],
            "unsupported_parameter",
        )
    n = body.get("n")
    if n is not None and (not is_integer(n) or n != 1):
        raise _bad("only n = 1 is supported", "n", "unsupported_parameter")
    if body.get("logprobs"):
        raise _bad("logprobs are not supported", "logprobs", "unsupported_parameter")
    schema, name, tool = _structured(body)
    forwarded = {k: _forwarded(k, body[k]) for k in sorted(FORWARDED & set(body))}
    extra = forwarded if provider == "openai" and forwarded else None
    request = Request.of(
        _messages(body.get("messages")),
        temperature=_temperature(body, default_temperature),
        max_tokens=_max_tokens(body),
        seed=_seed(body),
        json_schema=schema,
        schema_name=name,
        extra_body=extra,
    )
    dropped = tuple(forwarded) if extra is None else ()
    return ChatCall(request, tool, dropped)


def _messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise _bad("messages must be a non-empty list of messages", "messages")
    out = []
    for i, m in enumerate(value):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise _bad(f"{where} must be an object", where)
        role = m.get("role")
        if role in ("tool", "function") or m.get("tool_calls") or m.get("function_call"):
            raise _bad(
                f"{where}: tool calls and tool results in the conversation are not supported "
                "(hy-eval serve answers one turn)",
                where,
                "unsupported_parameter",
            )
        if role not in _ROLES:
            raise _bad(f"{where}: unknown role {short_text(repr(role), 40)}", f"{where}.role")
        message = {"role": _ROLES[role], "content": _content(m.get("content"), where)}
        name = m.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise _bad(f"{where}.name must be a string", f"{where}.name")
            message["name"] = name
        out.append(message)
    return out


def _content(value: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list joined by line breaks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for j, part in enumerate(value):
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise _bad(
                    f"{where}.content[{j}]: only text parts are supported "
                    f"(got {short_text(repr(kind), 40)})",
                    f"{where}.content",
                    "unsupported_parameter",
                )
            if not isinstance(part.get("text"), str):
                raise _bad(f"{where}.content[{j}].text must be a string", f"{where}.content")
            texts.append(part["text"])
        return "\n".join(texts)
    raise _bad(f"{where}.content must be a string or a list of text parts", f"{where}.content")


def _temperature(body: Mapping[str, Any], default: float) -> float:
    value = body.get("temperature")
    if value is None:
        return default
    if not _number(value) or not 0 <= value <= 2:
        raise _bad("temperature must be a number from 0 to 2", "temperature")
    return float(value) + 0.0  # -0.0 + 0.0 is 0.0: one cache key for one temperature


def _max_tokens(body: Mapping[str, Any]) -> int:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not is_integer(value) or not 1 <= value <= MAX_TOKENS_LIMIT:
            raise _bad(f"{name} must be a whole number from 1 to {MAX_TOKENS_LIMIT:,}", name)
        return int(value)
    return DEFAULT_MAX_TOKENS


def _seed(body: Mapping[str, Any]) -> int:
    value = body.get("seed")
    if value is None:
        return 0  # Request's default: one fixed seed, so a repeated request is a cache hit
    if not is_integer(value) or not SEED_RANGE[0] <= value <= SEED_RANGE[1]:
        raise _bad("seed must be a whole number that fits in 64 bits (signed)", "seed")
    return int(value)


def _forwarded(name: str, value: Any) -> Any:
    """A sampling field of :data:`FORWARDED`, checked and normalised: numbers as floats
    (``1`` and ``1.0`` are one cache key), a 400 naming the field for anything a provider
    would refuse or misread. ``null`` stays ``null`` (the provider's default)."""
    if value is None:
        return None
    if name == "top_p":
        return _bounded(name, value, 0.0, 1.0)
    if name in ("presence_penalty", "frequency_penalty"):
        return _bounded(name, value, -2.0, 2.0)
    if name == "stop":
        return _stop(value)
    return _logit_bias(value)


def _bounded(name: str, value: Any, low: float, high: float) -> float:
    if not _number(value) or not low <= value <= high:
        raise _bad(f"{name} must be a number from {low:g} to {high:g}", name)
    return float(value) + 0.0


def _stop(value: Any) -> str | list[str]:
    if isinstance(value, str):
        return value
    if (
        not isinstance(value, list)
        or len(value) > MAX_STOP
        or not all(isinstance(s, str) for s in value)
    ):
        raise _bad(f"stop must be a string or a list of at most {MAX_STOP} strings", "stop")
    return list(value)


def _logit_bias(value: Any) -> dict[str, float]:
    """Token ids (as decimal strings) to biases from -100 to 100, as OpenAI takes them."""
    if not isinstance(value, dict):
        raise _bad("logit_bias must be an object of token ids to numbers", "logit_bias")
    out: dict[str, float] = {}
    for token, bias in value.items():
        if not (isinstance(token, str) and token.isascii() and token.isdigit()):
            raise _bad("logit_bias keys must be token ids (whole numbers)", "logit_bias")
        out[token] = _bounded("logit_bias", bias, -100.0, 100.0)
    return out


def _structured(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``(schema, schema name, tool name)`` of ``response_format`` or ``tools``."""
    fmt = _response_format(body.get("response_format"))
    tool = _tool(body.get("tools"), body.get("tool_choice"))
    if fmt is not None and tool is not None:
        raise _bad(
            "give either a JSON response_format or a tool to call, not both",
            "response_format",
            "unsupported_parameter",
        )
    if tool is not None:
        return tool[1], tool[0], tool[0]
    if fmt is not None:
        return fmt[1], fmt[0], None
    return None, None, None


def _response_format(value: Any) -> tuple[str, dict[str, Any]] | None:
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        schema = value.get("schema")  # llama-cpp-python's form carries one
        if schema is None:
            return "json_object", {"type": "object"}
        return "json_object", _schema(schema, "response_format.schema")
    if kind == "json_schema":
        spec = value.get("json_schema")
        if not isinstance(spec, dict):
            raise _bad("response_format.json_schema must be an object", "response_format")
        name = spec.get("name") or "answer"
        if not isinstance(name, str):
            raise _bad("response_format.json_schema.name must be a string", "response_format")
        return name, _schema(spec.get("schema"), "response_format.json_schema.schema")
    raise _bad("response_format.type must be text, json_object or json_schema", "response_format")


def _schema(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"{where} must be a JSON schema object", where)
    return value


def _tool(tools: Any, choice: Any) -> tuple[str, dict[str, Any]] | None:
    """``(name, parameters)`` of the one function the answer must call, or ``None``."""
    if tools is None or choice == "none":
        return None
    if not isinstance(tools, list) or not tools:
        raise _bad("tools must be a non-empty list", "tools")
    functions: dict[str, dict[str, Any]] = {}
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) and t.get("type") == "function" else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _bad(f"tools[{i}] must be a function with a name", f"tools[{i}]")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        functions[fn["name"]] = _schema(params, f"tools[{i}].function.parameters")
    if isinstance(choice, dict):
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else None
        if name not in functions:
            raise _bad("tool_choice names no function of tools", "tool_choice")
        return name, functions[name]
    if choice not in (None, "auto", "required"):
        raise _bad("tool_choice must be none, auto, required or a function", "tool_choice")
    if len(functions) != 1:
        raise _bad(
            "hy-eval serve answers with one forced tool call: send one tool, or name the "
            "tool in tool_choice",
            "tool_choice",
            "unsupported_parameter",
        )
    [(name, params)] = functions.items()
    return name, params


def _finish_reason(completion: Completion, tool: str | None) -> str:
    """OpenAI's word for why the answer ended, whatever the provider's was."""
    if completion.finish_reason in ("length", "max_tokens"):
        return "length"
    return "tool_calls" if tool is not None else "stop"


def answer_text(call: ChatCall, completion: Completion) -> str:
    """What goes back as the content or the tool's arguments: the parsed object when JSON
    was asked for and the answer could be read as one (after the safe repairs of
    docs/llm.md), else the answer's text as the provider gave it."""
    if call.request.json_schema is not None and completion.parsed is not None:
        return json.dumps(completion.parsed, ensure_ascii=False)
    return completion.text


def chat_response(
    call: ChatCall, completion: Completion, *, key: str, model: str, created: int
) -> dict[str, Any]:
    """The chat.completion body for ``completion`` (``key`` is its cache key)."""
    text = answer_text(call, completion)
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if call.tool is not None:
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": f"call_{key[:24]}",
                "type": "function",
                "function": {"name": call.tool, "arguments": text},
            }
        ]
    usage = completion.usage
    return {
        "id": f"chatcmpl-{key[:24]}",
        "object": "chat.completion",
        "created": created,
        "model": completion.model_id or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(completion, call.tool),
            }
        ],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
    }


# ---- embeddings and models --------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingCall:
    texts: tuple[str, ...]
    dimensions: int = DEFAULT_DIMENSIONS
    base64: bool = False


def read_embeddings(body: Mapping[str, Any]) -> EmbeddingCall:
    """``body`` (an embeddings request) as an :class:`EmbeddingCall`; 400 for what the
    stand-in cannot take (token arrays, an unknown field, a bad dimension count)."""
    unknown = sorted(set(body) - {"model", "input", "dimensions", "encoding_format", "user"})
    if unknown:
        raise _bad(
            f"unsupported parameter {short_text(unknown[0], 60)!r}",
            unknown[0],
            "unsupported_parameter",
        )
    value = body.get("input")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise _bad("input must be a string or a non-empty list of strings", "input")
    if len(texts) > MAX_EMBEDDING_INPUTS:
        raise _bad(f"input holds more than {MAX_EMBEDDING_INPUTS} items", "input")
    if not all(isinstance(t, str) for t in texts):
        raise _bad(
            "input must be text: the embedding stand-in takes no token arrays",
            "input",
            "unsupported_parameter",
        )
    dimensions = body.get("dimensions", DEFAULT_DIMENSIONS)
    if not is_integer(dimensions) or not 1 <= dimensions <= MAX_DIMENSIONS:
        raise _bad(f"dimensions must be a whole number from 1 to {MAX_DIMENSIONS}", "dimensions")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise _bad("encoding_format must be float or base64", "encoding_format")
    return EmbeddingCall(tuple(texts), int(dimensions), encoding == "base64")


def embeddings_response(
    vectors: list[Any], *, tokens: int, model: str = EMBEDDING_MODEL
) -> dict[str, Any]:
    """The embeddings list body; each vector a list of floats or a base64 string."""
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def model_object(model: str, owner: str) -> dict[str, Any]:
    return {"id": model, "object": "model", "created": 0, "owned_by": owner}
