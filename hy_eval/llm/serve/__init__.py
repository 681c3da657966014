"""``hy-eval serve``, the LLM layer as an OpenAI-compatible endpoint: the HTTP server
(``_server``), the routes' work (``_app``), the wire format read and written (``_wire``),
who may call (``_guard``) and the hashed embedding stand-in (``_embed``). The top room:
above ``providers``; it does not use ``batch``."""

from hy_eval.llm.serve._app import ServeSummary
from hy_eval.llm.serve._embed import EMBEDDING_MODEL, hashed_embedding
from hy_eval.llm.serve._server import LLMServer, serve_in_thread

__all__ = ["EMBEDDING_MODEL", "LLMServer", "ServeSummary", "hashed_embedding", "serve_in_thread"]
