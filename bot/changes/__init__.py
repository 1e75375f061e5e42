"""A change's approval lifecycle, below the agent and the adapters: what a pending change is
(types), who may approve it and when an approver's decision settles it (decide), the grant an
approval gives (grants), how many rows it may write (bounds), whether it has an exact
Undo (undo_rules), and carrying it out: the write-ahead record and the run bounded by its card
(execute). Nothing here knows of the chat adapters, and no SQL text is handled here.

This package's own modules import nothing from bot.agent; bot.db's impact and bounded run ask
`bounds` and `undo_rules`, so this file imports nothing, to keep those imports free of
cycles."""
