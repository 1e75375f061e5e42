"""Block Kit, built by plain functions that return dicts: one module per kind of message.

Everything the model or a database wrote goes through `mrkdwn.escape` (or `to_mrkdwn`)
before it lands in a mrkdwn field. Button values carry only a stored record's id (a pending
approval, a question, a proposal): what runs always comes from the store, never from a
click's payload.
"""
