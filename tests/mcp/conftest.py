"""MCP clients against the running bot: the SDK's own client over Streamable HTTP (the
bot's HTTP server, in process) and over stdio (`dbagent mcp`, a real process), with the
fake Slack, the real MariaDB and, for stdio, the real Redis."""

from tests.slack.conftest import model, shop_url, slack  # noqa: F401 (fixtures)
