"""What the state layer raises: one type the callers report to the person."""

from __future__ import annotations


class StateError(Exception):
    """The state store cannot do what was asked (disk full, file locked or corrupt, Redis out
    of reach); the message says what and where, in words a person can act on."""


class StateLocked(StateError):
    """Another process holds the embedded state directory."""
