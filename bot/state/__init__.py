"""Everything the bot keeps between messages, behind one repository per kind of record.

Nothing outside this package names a table or a key: open the store with `open_state`,
and use its repositories (`state.sessions`, `state.pending`, …).
"""

from bot.state.errors import StateError, StateLocked
from bot.state.facade import State, open_state
from bot.state.grants import Grants, GrantScope, sql_digest

__all__ = ["GrantScope", "Grants", "State", "StateError", "StateLocked", "open_state", "sql_digest"]
