"""Whether a JSON value has the shape a request's JSON Schema asks for: the keywords this
project's schemas use for shape (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``enum``, ``const``, ``anyOf``). Counts and lengths
(``maxItems``, ``maxLength``, ...) are left to the pipeline, which cuts an answer to them
as it cuts a live answer (docs/reliability.md, item 7). Used on answers read from files
(``batch/_folder.py``), where no server constrained the decoding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(value: Any, kind: str) -> bool:
    if kind not in _TYPES:
        return True  # a type this checker does not know is not refused
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[kind])


def schema_problem(value: Any, schema: Mapping[str, Any], where: str = "answer") -> str | None:
    """The first place where ``value`` leaves ``schema``'s shape, in one line, or ``None``."""
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, list) and not any(_is(value, k) for k in kinds):
        return f"{where} is not of type {'/'.join(map(str, kinds))}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} is not one of the schema's values"
    if "const" in schema and value != schema["const"]:
        return f"{where} is not the schema's value"
    options = schema.get("anyOf")
    choices = [o for o in options if isinstance(o, Mapping)] if isinstance(options, list) else []
    if choices and all(schema_problem(value, o, where) for o in choices):
        return f"{where} matches none of the schema's choices"
    if isinstance(value, dict):
        return _object_problem(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{where}[{i}]")
            if problem:
                return problem
    return None


def _object_problem(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> str | None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    for name in schema.get("required") or ():
        if name not in value:
            return f"{where} has no {name!r}"
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props and isinstance(props[name], Mapping):
            problem = schema_problem(item, props[name], f"{where}.{name}")
            if problem:
                return problem
        elif extra is False:
            return f"{where} has {name[:40]!r}, which the schema does not allow"
    return None
