"""The HMAC over grants, pending approvals and forwarded Stops (bot.state.seal): a record
reads back only as the bot wrote it, with the bot's key. One row per case."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from bot.config import Settings
from bot.state import open_state
from bot.state.errors import StateError
from bot.state.redis_db import RedisDb
from bot.state.seal import MAC, Seal, state_key
from bot.state.stops import FRESH_S, RedisStopRequests
from tests.waiting import until

KEY = "k" * 32
SEAL = Seal(KEY)
GRANT = {"id": "g1", "binding": "s\x1fdb\x1fabc", "scope": "once", "expires_at": 2e9, "n": 1.5}
SIGNED = SEAL.sign("grant", GRANT)

# (what is read back, why it reads as absent)
FORGED = [
    (GRANT, "no MAC at all: written without the key"),
    ({**SIGNED, "binding": "s\x1fdb\x1fother"}, "another SQL's digest under the same MAC"),
    ({**SIGNED, "scope": "thread"}, "a one-time grant made a thread grant"),
    ({**SIGNED, "expires_at": 3e9}, "its expiry pushed back"),
    ({**SIGNED, "approver": "U0SOMEONE"}, "a field added"),
    ({k: v for k, v in SIGNED.items() if k != "n"}, "a field removed"),
    ({**SIGNED, MAC: SIGNED[MAC].upper()}, "the MAC in other letters"),
    ({**SIGNED, MAC: 5}, "a MAC that is not text"),
    (Seal("x" * 32).sign("grant", GRANT), "signed with another key"),
]


@pytest.mark.parametrize(("record", "why"), FORGED, ids=[why for _, why in FORGED])
def test_a_record_not_as_the_bot_wrote_it_reads_as_absent(record: dict, why: str) -> None:
    assert SEAL.opened("grant", record, "grants/g1") is None, why


def test_a_record_as_the_bot_wrote_it_reads_back_without_its_mac() -> None:
    assert SEAL.opened("grant", SIGNED, "grants/g1") == GRANT
    assert SEAL.opened("grant", json.loads(json.dumps(SIGNED)), "grants/g1") == GRANT


def test_a_mac_holds_for_one_kind_of_record_only() -> None:
    assert SEAL.opened("pending", SIGNED, "pending/g1") is None


def test_a_short_key_is_refused_at_start() -> None:
    with pytest.raises(StateError, match="at least 32"):
        Seal("short")


async def test_a_forwarded_stop_is_heard_only_as_a_serving_process_sent_it(
    redis_url: str, redis_prefix: str
) -> None:
    db = await RedisDb.open(redis_url, prefix=redis_prefix)
    stops = RedisStopRequests(db, SEAL)
    heard: list[dict] = []

    async def listen() -> None:
        async for request in stops.incoming():
            heard.append(request)

    listening = asyncio.create_task(listen())
    try:
        channel = db.key("stops")
        genuine = {"user": "U0ASKER", "value": "run-1"}
        forged = [
            {"user": "U0BYSTANDER", "value": "run-1"},  # no MAC
            {**SEAL.sign("stop", {**genuine, "forwarded_at": time.time()}), "user": "U0X"},
            SEAL.sign("stop", {**genuine, "forwarded_at": time.time() - FRESH_S - 5}),  # replayed
            Seal("z" * 32).sign("stop", {**genuine, "forwarded_at": time.time()}),
        ]
        await until(lambda: stops.forward({"user": "U0WARMUP"}))  # the listener hears
        for request in forged:
            await db.run(lambda c, r=request: c.publish(channel, json.dumps(r)))
        await stops.forward(genuine)
        await until(lambda: any(request.get("value") == "run-1" for request in heard))
        assert [r for r in heard if r.get("user") != "U0WARMUP"] == [genuine]
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
        await db.close()


# (DBAGENT_STATE_KEY, SLACK_BOT_TOKEN, what signs, why)
KEY_SOURCES = [
    ("s" * 32, "xoxb-one", "the key", "a key of its own wins over the token"),
    (None, "xoxb-one", "derived", "no key: derived from the token every replica shares"),
    (None, None, None, "neither: nothing to sign with, a Redis store refuses to open"),
    (None, "", None, "an empty token derives nothing"),
]


@pytest.mark.parametrize(
    ("key", "token", "signs", "why"), KEY_SOURCES, ids=[why for *_, why in KEY_SOURCES]
)
def test_the_state_key_comes_from_the_environment_or_the_bot_token(
    key: str | None, token: str | None, signs: str | None, why: str
) -> None:
    settings = Settings(dbagent_state_key=key, slack_bot_token=token, databases=[])
    derived = state_key(settings)
    if signs is None:
        assert derived is None, why
    elif signs == "the key":
        assert derived == key, why
    else:
        assert derived is not None and len(derived) >= 32, why
        assert token is not None and token not in derived, "the token itself is never the key"


def test_a_key_derived_from_one_bot_token_does_not_open_another_apps_records() -> None:
    def seal_for(token: str) -> Seal:
        return Seal(state_key(Settings(dbagent_state_key=None, slack_bot_token=token)))

    signed = seal_for("xoxb-one").sign("grant", GRANT)
    assert seal_for("xoxb-one").opened("grant", signed, "grants/g1") == GRANT
    assert seal_for("xoxb-two").opened("grant", signed, "grants/g1") is None


async def test_a_redis_store_opens_signed_with_the_derived_key_and_not_without_one(
    redis_url: str, redis_prefix: str, tmp_path
) -> None:
    def settings(token: str | None) -> Settings:
        return Settings(
            dbagent_state_url=redis_url,
            dbagent_state_key=None,
            slack_bot_token=token,
            dbagent_state_dir=tmp_path / "state",
            databases=[],
        )

    opened = await open_state(settings("xoxb-one"), redis_prefix=redis_prefix)
    await opened.close()
    with pytest.raises(StateError, match="DBAGENT_STATE_KEY is not set, nor SLACK_BOT_TOKEN"):
        await open_state(settings(None), redis_prefix=redis_prefix)
