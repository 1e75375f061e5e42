"""Schema names unique to this test run, so two runs on one server (a developer and CI, or two
checkouts) never create, reset or drop each other's schemas."""

from __future__ import annotations

import os

RUN_SUFFIX = f"_{os.getpid()}"
PREFIX = "dbagent_t_"


def run_schema(base: str) -> str:
    """`base` (which starts with dbagent_t_) made unique to this run."""
    assert base.startswith(PREFIX), base
    return f"{base}{RUN_SUFFIX}"
