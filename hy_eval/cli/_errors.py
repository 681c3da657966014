"""The one error a command raises for the user: printed as one line, never a traceback."""

from __future__ import annotations

from hy_eval._exitcodes import ExitCode


class UserError(Exception):
    """An error the user can fix: ``hy-eval: error: <message>`` on stderr, exit ``exit_code``."""

    def __init__(self, message: str, exit_code: int = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def at_least(flag: str, value: float, low: float) -> None:
    """A meaningless count (``--limit -1``) is a usage error (issue 14)."""
    if value < low:
        raise UserError(f"{flag} must be at least {low:g} (got {value})")
