"""Several processes on one Redis: every claim is won by exactly one of them."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from bot.config import Settings
from bot.state import GrantScope, open_state
from bot.state.executions import ExecutionRecord
from bot.state.posted import PostedMessage

CLAIMS = 40

CLAIM_EVERYTHING = """
import asyncio, json, sys
from bot.config import Settings
from bot.state import open_state

async def main(url, prefix, directory, count):
    settings = Settings(dbagent_state_url=url, dbagent_state_dir=directory, databases=[])
    state = await open_state(settings, redis_prefix=prefix)
    sys.stdin.readline()  # start together
    ids = [f"p{n}" for n in range(count)]
    pending = await asyncio.gather(*(state.pending.claim(i) for i in ids))
    grants = await asyncio.gather(
        *(state.grants.consume(f"s{n}", "shop", "DELETE FROM t") for n in range(count))
    )
    seen = await asyncio.gather(*(state.seen_events.claim(f"event:{n}") for n in range(count)))
    cards = await asyncio.gather(*(state.posted.take("card", i) for i in ids))
    told = await asyncio.gather(
        *(state.executions.interrupt(f"e{n}", "outcome unknown") for n in range(count))
    )
    await state.close()
    print(json.dumps({
        "pending": [i for i, r in zip(ids, pending) if r is not None],
        "grants": [n for n, won in enumerate(grants) if won],
        "seen": [n for n, won in enumerate(seen) if won],
        "cards": [i for i, r in zip(ids, cards) if r is not None],
        "interrupted": [n for n, won in enumerate(told) if won],
    }))

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


async def test_two_processes_racing_for_every_claim_win_each_once(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    settings = Settings(dbagent_state_url=redis_url, dbagent_state_dir=tmp_path, databases=[])
    state = await open_state(settings, redis_prefix=redis_prefix)
    for n in range(CLAIMS):
        await state.pending.add({"id": f"p{n}", "created_at": time.time()})
        await state.grants.mint(f"s{n}", "shop", "DELETE FROM t", GrantScope.ONCE, "U1")
        await state.posted.remember(
            PostedMessage("card", f"p{n}", f"s{n}", "C1", f"{n}.0", time.time())
        )
        await state.executions.begin(
            ExecutionRecord(
                id=f"e{n}",
                session_id=f"s{n}",
                database="shop",
                environment="staging",
                sql="DELETE FROM t",
                requester="U1",
                approver="U2",
                grant_id="g",
                transactional=True,
                started_at=time.time(),
            )
        )
    await state.close()

    racers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLAIM_EVERYTHING,
            redis_url,
            redis_prefix,
            str(tmp_path),
            str(CLAIMS),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = await asyncio.gather(*(racer.communicate(b"go\n") for racer in racers))
    won = [json.loads(out) for out, _ in outputs]
    # "interrupted": of the workers of `serve --workers N`, one reports each cut-off change.
    for kind in ("pending", "grants", "seen", "cards", "interrupted"):
        first, second = (set(report[kind]) for report in won)
        assert not first & second, f"{kind}: claimed twice: {sorted(first & second)}"
        assert len(first | second) == CLAIMS, f"{kind}: some were never claimed"


async def test_a_prefix_in_the_url_keeps_the_keys_apart(
    redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    url = f"{redis_url}?prefix={redis_prefix}url:"
    state = await open_state(
        Settings(dbagent_state_url=url, dbagent_state_dir=tmp_path, databases=[])
    )
    await state.seen_events.claim("event:E1")
    keys = [key async for key in state.backend.client.scan_iter(match=f"{redis_prefix}url:*")]
    await state.close()
    assert keys == [f"{redis_prefix}url:seen:event:E1"]
