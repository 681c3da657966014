"""The deterministic heart of the pipeline: normalise, render and read back conversations.

Pure functions, no I/O (rules M1-M7, D1-D6, H1-H5 of the spec).
"""

from hy_eval.conversation._messages import ChatMessage, MessageError, normalise_messages
from hy_eval.conversation._parse import (
    HistoryError,
    ParsedHistory,
    history_context,
    parse_l1_raw,
    read_l1_raw,
)
from hy_eval.conversation._render import (
    UserName,
    conversation_language,
    detect_language,
    is_cjk,
    name_line,
    render_conversation,
    resolve_user_name,
    speaker_label,
)

__all__ = [
    "ChatMessage",
    "HistoryError",
    "MessageError",
    "ParsedHistory",
    "UserName",
    "conversation_language",
    "detect_language",
    "history_context",
    "is_cjk",
    "name_line",
    "normalise_messages",
    "parse_l1_raw",
    "read_l1_raw",
    "render_conversation",
    "resolve_user_name",
    "speaker_label",
]
