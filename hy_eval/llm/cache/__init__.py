"""What a run keeps of the model's answers: the answer cache and its keys (``_cache``),
cassettes, the cache as a JSON-lines file (``_cassette``), and the machine record
written beside a cassette (``_machine``). Above ``core``."""

from hy_eval.llm.cache._cache import (
    CACHE_MODES,
    AnswerCache,
    CacheMiss,
    CacheMode,
    cache_key,
    canonical_json,
    key_fields,
    open_db,
)
from hy_eval.llm.cache._cassette import cassette_rows, export_cassette, import_cassette
from hy_eval.llm.cache._machine import machine_info, machines_match, read_sidecar, sidecar

__all__ = [
    "CACHE_MODES",
    "AnswerCache",
    "CacheMiss",
    "CacheMode",
    "cache_key",
    "canonical_json",
    "cassette_rows",
    "export_cassette",
    "import_cassette",
    "key_fields",
    "machine_info",
    "machines_match",
    "open_db",
    "read_sidecar",
    "sidecar",
]
