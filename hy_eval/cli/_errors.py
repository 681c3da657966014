"""The one error a command raises for the user: printed as one line, never a traceback."""

from __future__ import annotations

from collections.abc import Sequence

from hy_eval._exitcodes import ExitCode


class UserError(Exception):
    """An error the user can fix: ``hy-eval: error: <message>`` on stderr, exit ``exit_code``.

    A message is one line; a line break inside it (from a file name, say) is printed as an
    escape. Several problems at once (a dataset's) are given as a list, one line each."""

    def __init__(self, message: str | Sequence[str], exit_code: int = ExitCode.USAGE) -> None:
        self.lines = (message,) if isinstance(message, str) else tuple(message)
        super().__init__("\n".join(self.lines))
        self.exit_code = exit_code


def at_least(flag: str, value: float, low: float) -> None:
    """A meaningless count (``--limit -1``) is a usage error."""
    if value < low:
        raise UserError(f"{flag} must be at least {low:g} (got {value})")
