"""Redis as the state store: what would lose or refuse state — keys evicted when full, writes
refused at maxmemory, nothing kept across a Redis restart."""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError

from bot.check.lines import Line, passed, warning

FULL_SHARE = 0.8  # used memory past this share of maxmemory is worth a warning


async def redis_lines(client: Any, where: str, policy: str | None) -> list[Line]:
    """Eviction policy (`policy`, None when CONFIG is not allowed), memory headroom and
    persistence, one line each."""
    lines = [_eviction_line(where, policy)]
    try:
        memory = await client.info("memory")
        persistence = await client.info("persistence")
    except RedisError as exc:  # INFO refused (a managed service): say what was not checked
        return [*lines, warning("Redis", f"INFO is refused ({exc})", "check memory by hand")]
    lines.append(_memory_line(memory))
    lines.append(_persistence_line(persistence, await _snapshots(client)))
    return lines


def _eviction_line(where: str, policy: str | None) -> Line:
    if policy is not None and policy != "noeviction":
        return warning(
            "state",
            f"Redis at {where} answers, but evicts keys when full (maxmemory-policy {policy})",
            "set maxmemory-policy noeviction: an evicted lease lets two replicas run one "
            "thread at once, and evicted approvals and seen events are lost",
        )
    return passed("state", f"Redis at {where} answers")


def _memory_line(memory: dict[str, Any]) -> Line:
    limit = int(memory.get("maxmemory") or 0)
    used = int(memory.get("used_memory") or 0)
    if limit and used > FULL_SHARE * limit:
        return warning(
            "Redis memory",
            f"{used / limit:.0%} of maxmemory used ({used:,} of {limit:,} bytes); when full, "
            "Redis refuses writes and the bot drops events (/health answers 503)",
            "raise maxmemory, or shorten [retention] so less is kept",
        )
    shown = f"{used:,} bytes used of {limit:,}" if limit else f"{used:,} bytes used, no maxmemory"
    return passed("Redis memory", shown)


async def _snapshots(client: Any) -> bool | None:
    """Whether RDB snapshots are on (CONFIG's `save` is not empty); None when CONFIG is
    refused (managed services)."""
    try:
        reply = await client.config_get("save")
    except RedisError:
        return None
    return bool(str(reply.get("save") or "").strip())


def _persistence_line(persistence: dict[str, Any], snapshots: bool | None) -> Line:
    if str(persistence.get("aof_enabled", "0")) == "1":
        return passed("Redis persistence", "append-only file on")
    if snapshots:
        return passed("Redis persistence", "RDB snapshots on (the last minutes may be lost)")
    if snapshots is None:
        return passed(
            "Redis persistence", "no append-only file; snapshots not known (CONFIG refused)"
        )
    return warning(
        "Redis persistence",
        "neither an append-only file nor snapshots: a Redis restart loses pending approvals, "
        "sessions, grants and the record of events already answered",
        "set appendonly yes (or RDB snapshots with save) on the state Redis",
    )
