"""A change's approval lifecycle, below the agent and the adapters: what a pending change is
(types), who may approve it and when an approver's decision settles it (decide), and how many
rows it may write (bounds). Nothing here knows of the chat adapters, and no SQL text is
handled here.

This package's own modules import nothing from bot.agent; bot.db's bounded run asks
`bounds.over_bound`, so this file imports nothing, to keep that import free of cycles."""
