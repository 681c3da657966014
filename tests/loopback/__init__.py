"""The loopback servers: scripted model servers on 127.0.0.1 speaking the vendors' wire
formats (OpenAI chat completions, Anthropic messages, both vendors' Files and Batches
endpoints), for the tests and the benchmarks. They live beside the tests, not in the
installed package: nothing a user runs serves them. The tests import them as
``tests.loopback`` (pytest puts the repository's root on the path, ``tests`` being a
package); the benchmarks put the root on ``sys.path`` first."""

from tests.loopback._batch import BatchBackend, BatchScript
from tests.loopback._server import (
    LoopbackServer,
    Reply,
    ServedRequest,
    anthropic_message,
    error_body,
    openai_completion,
)

__all__ = [
    "BatchBackend",
    "BatchScript",
    "LoopbackServer",
    "Reply",
    "ServedRequest",
    "anthropic_message",
    "error_body",
    "openai_completion",
]
