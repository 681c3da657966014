"""The bottom room of the LLM layer: the request, completion and usage types, the
provider protocol and its errors (``_base``), the JSON-schema check of an answer
(``_schema_check``) and the price table (``_prices``). Imports nothing of the rooms above."""

from hy_eval.llm.core._base import (
    Completion,
    ConfigError,
    Interrupted,
    ModelProcessDied,
    Provider,
    ProviderError,
    RepeatedRefusal,
    Request,
    RunStopped,
    Usage,
    answer_problem,
    parse_json_answer,
    sdk_error,
    short_text,
)
from hy_eval.llm.core._prices import DEFAULT_PRICES, PriceTable
from hy_eval.llm.core._schema_check import schema_problem

__all__ = [
    "DEFAULT_PRICES",
    "Completion",
    "ConfigError",
    "Interrupted",
    "ModelProcessDied",
    "PriceTable",
    "Provider",
    "ProviderError",
    "RepeatedRefusal",
    "Request",
    "RunStopped",
    "Usage",
    "answer_problem",
    "parse_json_answer",
    "schema_problem",
    "sdk_error",
    "short_text",
]
