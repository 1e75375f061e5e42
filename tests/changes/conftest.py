"""The change's lifecycle is tested where it is used: through the Agent, on the real MariaDB
and the fake model server (the agent tests' fixtures), and `decide` on a real store."""

from tests.agent.conftest import (
    drop_the_shop_schema_at_the_end,
    make_agent,
    model_server,
    shop_url,
    streaming,
)

__all__ = [
    "drop_the_shop_schema_at_the_end",
    "make_agent",
    "model_server",
    "shop_url",
    "streaming",
]
