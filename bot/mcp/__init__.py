"""The bot's tools over MCP, for coding agents (Claude Code, Cursor, any MCP client).

Streamable HTTP at `/mcp` on PORT beside Slack (`http.add_mcp_routes`), or stdio
(`dbagent mcp`, `stdio.py`). A client authenticates with its bearer token from
`[[mcp.clients]]` and acts for the Slack user named there: the tools are the agent's own,
judged by the same classifier and guard, and a change becomes an approval card in
`[mcp] approval_channel` that another person must approve (`tools.McpTools`).
"""
