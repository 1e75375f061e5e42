"""Reaching Redis as a deployment that keeps it to the bot alone does: an ACL user with a
password (redis://user:password@…) and TLS (rediss://…, the server's certificate checked)."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest
import redis.asyncio as redis

from bot.config import Settings
from bot.state import open_state
from bot.state.errors import StateError
from bot.state.grants import GrantScope
from tests.private_redis import free_port
from tests.waiting import until


async def a_grant_round_trip(url: str, prefix: str, tmp_path: Path) -> None:
    settings = Settings(dbagent_state_url=url, dbagent_state_dir=tmp_path / "s", databases=[])
    state = await open_state(settings, redis_prefix=prefix)
    try:
        await state.grants.mint("T:C:1.1", "db", "DELETE FROM t", GrantScope.ONCE, "U0APPROVER")
        claim = await state.grants.claim("T:C:1.1", "db", "DELETE FROM t")
        assert claim is not None and claim.approver == "U0APPROVER"
    finally:
        await state.close()


@pytest.fixture
async def acl_user(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[str, str]]:
    """A run-unique ACL user allowed only the test's keys and channels; dropped after."""
    name, password = f"dbagent_t_{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    admin = redis.Redis.from_url(redis_url)
    await admin.execute_command(
        "ACL", "SETUSER", name, "on", f">{password}", "resetkeys", f"~{redis_prefix}*",
        "resetchannels", f"&{redis_prefix}*", "+@all",
    )  # fmt: skip
    try:
        yield name, password
    finally:
        await admin.execute_command("ACL", "DELUSER", name)
        await admin.aclose()


async def test_an_acl_user_with_a_password_reaches_its_own_keys(
    acl_user: tuple[str, str], redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    name, password = acl_user
    host = redis_url.split("://", 1)[1]
    await a_grant_round_trip(f"redis://{name}:{quote(password)}@{host}", redis_prefix, tmp_path)


async def test_a_wrong_password_is_one_clear_error_without_the_password(
    acl_user: tuple[str, str], redis_url: str, redis_prefix: str, tmp_path: Path
) -> None:
    name, _ = acl_user
    host = redis_url.split("://", 1)[1]
    settings = Settings(
        dbagent_state_url=f"redis://{name}:not-the-password@{host}",
        dbagent_state_dir=tmp_path,
        databases=[],
    )
    with pytest.raises(StateError) as raised:
        await open_state(settings, redis_prefix=redis_prefix)
    assert "not-the-password" not in str(raised.value)


@pytest.fixture
async def tls_redis(tmp_path: Path) -> AsyncIterator[tuple[int, Path]]:
    """A redis-server of the test's own that speaks TLS only, with a certificate for
    127.0.0.1 made for it: (its port, the certificate to trust)."""
    if shutil.which("redis-server") is None or shutil.which("openssl") is None:
        pytest.skip("redis-server and openssl are needed for a TLS Redis")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = await asyncio.create_subprocess_exec(
        "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
        "-addext", "subjectAltName=IP:127.0.0.1",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert await made.wait() == 0
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        "redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
        "--tls-cert-file", str(cert), "--tls-key-file", str(key),
        "--tls-ca-cert-file", str(cert), "--tls-auth-clients", "no", "--save", "",
        stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip

    async def answers() -> bool:
        client = redis.Redis.from_url(
            f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}", socket_connect_timeout=0.5
        )
        try:
            return bool(await client.ping())
        except (redis.ConnectionError, OSError):
            return False
        finally:
            await client.aclose()

    try:
        await until(answers)
        yield port, cert
    finally:
        server.terminate()
        await server.wait()


async def test_rediss_reaches_redis_over_tls(
    tls_redis: tuple[int, Path], redis_prefix: str, tmp_path: Path
) -> None:
    port, cert = tls_redis
    await a_grant_round_trip(
        f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}", redis_prefix, tmp_path
    )


async def test_rediss_refuses_a_certificate_it_cannot_trust(
    tls_redis: tuple[int, Path], redis_prefix: str, tmp_path: Path
) -> None:
    port, _ = tls_redis
    settings = Settings(
        dbagent_state_url=f"rediss://127.0.0.1:{port}/0", dbagent_state_dir=tmp_path, databases=[]
    )
    with pytest.raises(StateError, match="certificate"):
        await open_state(settings, redis_prefix=redis_prefix)
