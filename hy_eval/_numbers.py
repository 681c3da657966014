"""What counts as a number in a setting or a request: JSON and the command line give
Python's ``bool`` as an ``int`` subclass and floats that may be NaN; neither is a count
or a quantity here."""

from __future__ import annotations

from typing import TypeGuard


def is_integer(value: object) -> TypeGuard[int]:
    """A whole number, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    """A real number, not a bool, not NaN (an infinity passes; the caller bounds it)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
