"""Configuration: `dbagent.toml` (path from DBAGENT_CONFIG) plus the environment.

Bad configuration fails at start with one line naming the field (`ConfigError`), never a
traceback, and never with a password in it.
"""

from __future__ import annotations

import os
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConfigError(Exception):
    """A configuration problem, worded as one line that names the field."""


class Environment(StrEnum):
    PRODUCTION = "production"
    STAGING = "staging"
    DEVELOPMENT = "development"


class Mode(StrEnum):
    ASK = "ask"
    AGENT = "agent"


_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Slack user IDs start with U or W, user-group IDs with S; the rest is upper-case alphanumerics.
_SLACK_ID = re.compile(r"^[UWS][A-Z0-9]{2,}$")
_CHANNEL_ID = re.compile(r"^[CDG][A-Z0-9]{2,}$")
_DATABASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def expand_env(text: str) -> str:
    """Replace `${VAR}` with the variable's value; a missing variable is an error."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        return os.environ[name]

    return _ENV_REFERENCE.sub(substitute, text)


class ConnectionTarget(BaseModel):
    """A parsed `mysql://user:password@host:port/schema` URL. The password stays secret."""

    model_config = ConfigDict(frozen=True)

    host: str
    port: int = 3306
    user: str
    password: SecretStr = SecretStr("")
    schema_name: str | None = None

    @classmethod
    def parse(cls, url: str) -> ConnectionTarget:
        # Messages below never echo the URL: it may hold a password.
        try:
            parts = urlsplit(url)
            port = parts.port or 3306
        except ValueError:
            raise ValueError(
                "malformed URL (expected mysql://user:password@host:port/db)"
            ) from None
        if parts.scheme not in ("mysql", "mariadb"):
            raise ValueError("URL scheme must be mysql:// or mariadb://")
        if not parts.hostname:
            raise ValueError("URL has no host")
        if not parts.username:
            raise ValueError("URL has no user")
        schema = unquote(parts.path.lstrip("/")) or None
        if schema and "/" in schema:
            raise ValueError("URL path must be a single database name")
        return cls(
            host=parts.hostname,
            port=port,
            user=unquote(parts.username),
            password=SecretStr(unquote(parts.password or "")),
            schema_name=schema,
        )

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}/{self.schema_name or ''}"


_ROLE_NAME = re.compile(r"^[A-Za-z0-9_.$-]{1,128}$")
_SLACK_ID = re.compile(r"^[UWS][A-Z0-9]{2,}$")


class DatabaseConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    url: SecretStr
    environment: Environment
    description: str = ""
    read_url: SecretStr | None = None
    # Schemas besides the database's own that reads may touch (writes never may).
    read_schemas: list[str] = Field(default_factory=list)
    # Data protection (docs/security.md, "Data protection"): globs over "table.column"
    # (case-insensitive) whose values are masked, besides columns whose COMMENT holds
    # "[masked]"; the Slack users or user groups who see them raw; the channels where the
    # database may be used (None: anywhere).
    masked_columns: list[str] = Field(default_factory=list)
    unmasked_for: list[str] = Field(default_factory=list)
    channels: list[str] | None = None
    # [databases.access]: Slack user ID, user-group ID or "*" -> the database role each
    # statement a person causes runs under (SET ROLE); people it does not name are refused.
    access: dict[str, str] = Field(default_factory=dict)

    @field_validator("access")
    @classmethod
    def _roles_are_names(cls, value: dict[str, str]) -> dict[str, str]:
        for who, role in value.items():
            if not _ROLE_NAME.match(role):
                raise ValueError(f"role for {who} must be letters, digits, '_', '-' or '.'")
            if who != "*" and not _SLACK_ID.match(who):
                raise ValueError(f'{who} is not a Slack user or user-group ID (or "*")')
        return value

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not _DATABASE_NAME.match(value):
            raise ValueError("must be letters, digits, '.', '_' or '-' (at most 64)")
        return value

    @field_validator("url", "read_url", mode="before")
    @classmethod
    def _expand_and_check(cls, value: Any) -> Any:
        if value is None:
            return None
        raw = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not isinstance(raw, str):
            raise ValueError("must be a string URL")
        expanded = expand_env(raw)
        ConnectionTarget.parse(expanded)
        return SecretStr(expanded)

    @property
    def target(self) -> ConnectionTarget:
        return ConnectionTarget.parse(self.url.get_secret_value())

    @property
    def read_target(self) -> ConnectionTarget:
        """Where reads go: the replica when one is configured."""
        if self.read_url is None:
            return self.target
        return ConnectionTarget.parse(self.read_url.get_secret_value())

    @property
    def schema_name(self) -> str | None:
        return self.target.schema_name


class Approvals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    approvers: list[str] = Field(default_factory=list)
    # Optional channel that gets a line when a card is posted and when a write ran.
    audit_channel: str | None = None
    # Four eyes: the person who asked may not approve their own change.
    allow_self_approval: bool = False
    # Distinct approvers needed before a change runs; per environment below overrides it.
    required: int = Field(1, ge=1, le=10)
    environments: dict[Environment, int] = Field(default_factory=dict)
    # Each approver also gets a DM with a link to the card.
    dm: bool = False
    # The impact (rows, preview, plan) is computed within this, before the card is posted.
    impact_timeout_s: float = Field(5.0, gt=0, le=300)
    # Extra rows a change may touch beyond what its card stated before it is rolled back.
    row_margin: int = Field(0, ge=0)
    # A change whose count was unknown on the card may touch at most this many rows.
    max_rows_unknown: int = Field(1000, ge=0)
    # Rows read as a before-image for Undo; a larger change has no Undo.
    max_undo_rows: int = Field(10_000, ge=0)
    # A change whose rows cannot all be counted ahead (its own, its triggers', cascades' and
    # stored functions') is refused; true posts its card saying in words what is not counted.
    allow_uncounted: bool = False

    @field_validator("environments")
    @classmethod
    def _counts(cls, value: dict[Environment, int]) -> dict[Environment, int]:
        for environment, count in value.items():
            if not 1 <= count <= 10:
                raise ValueError(f"{environment}: approvals required must be 1 to 10")
        return value

    def required_for(self, environment: Environment) -> int:
        return self.environments.get(environment, self.required)

    @field_validator("approvers")
    @classmethod
    def _slack_ids(cls, value: list[str]) -> list[str]:
        for approver in value:
            if not _SLACK_ID.match(approver):
                raise ValueError(
                    f"{approver!r} is not a Slack user ID (U…/W…) or user-group ID (S…)"
                )
        return value


class Retention(BaseModel):
    """How long each kind of record is kept; 0 keeps it forever."""

    model_config = ConfigDict(extra="forbid")

    sessions_days: float = Field(30, ge=0)
    seen_events_days: float = Field(1, ge=0)
    proposals_days: float = Field(7, ge=0)
    audit_days: float = Field(365, ge=0)


class SlackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Rows in a result's preview table (Slack's table block holds 100 rows with the header).
    preview_rows: int = Field(20, ge=1, le=99)
    # A longer answer is posted as its first part plus the whole text as a file.
    max_answer_chars: int = Field(12_000, ge=1000)
    # Running turns get this long to finish on SIGTERM before the bot exits.
    shutdown_grace_s: float = Field(20.0, ge=0, le=600)


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default_rows: int = Field(50, ge=1, le=1000)
    max_rows: int = Field(1000, ge=1, le=100_000)
    default_sample_rows: int = Field(20, ge=1, le=100)
    max_sample_rows: int = Field(100, ge=1, le=10_000)
    cell_chars: int = Field(200, ge=8, le=100_000)
    statement_timeout_s: float = Field(30.0, gt=0, le=3600)
    connect_timeout_s: float = Field(5.0, gt=0, le=120)
    pool_size: int = Field(5, ge=1, le=100)
    # An unused one-time grant, and a thread grant, stop matching after these.
    once_grant_ttl_s: int = Field(3600, ge=1)
    thread_grant_ttl_s: int = Field(3600, ge=1)
    max_iterations: int = Field(25, ge=1, le=1000)
    tool_result_chars: int = Field(12_000, ge=500)
    history_token_budget: int = Field(60_000, ge=1000)
    model_timeout_s: float = Field(120.0, gt=0)
    model_max_retries: int = Field(3, ge=0, le=10)
    max_message_chars: int = Field(8_000, ge=100)
    # An approval card nobody decided stops working after this: a week-old card is no
    # longer the state of the data anyone looked at.
    approval_ttl_s: int = Field(24 * 3600, ge=60)
    # SQL longer than this is refused before it is classified (and never shown on a card).
    max_sql_chars: int = Field(100_000, ge=1000)


# An MCP client's bearer token: long enough that guessing it is hopeless.
MIN_MCP_TOKEN_CHARS = 32


class McpClient(BaseModel):
    """`[[mcp.clients]]`: a coding agent (Claude Code, Cursor, …) that reaches the tools over
    MCP with a bearer token, acting for one Slack user."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    token: SecretStr
    user: str  # the Slack user it acts for: the requester of what it asks

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not _DATABASE_NAME.match(value):
            raise ValueError("must be letters, digits, '.', '_' or '-' (at most 64)")
        return value

    @field_validator("token", mode="before")
    @classmethod
    def _expand_token(cls, value: Any) -> Any:
        raw = value.get_secret_value() if isinstance(value, SecretStr) else value
        if not isinstance(raw, str):
            raise ValueError("must be a string")
        expanded = expand_env(raw)
        if len(expanded) < MIN_MCP_TOKEN_CHARS:
            raise ValueError(
                f"must be at least {MIN_MCP_TOKEN_CHARS} characters (e.g. openssl rand -hex 32)"
            )
        return SecretStr(expanded)

    @field_validator("user")
    @classmethod
    def _slack_user(cls, value: str) -> str:
        if not _SLACK_ID.match(value) or value.startswith("S"):
            raise ValueError(f"{value!r} is not a Slack user ID (U…/W…)")
        return value


class McpSettings(BaseModel):
    """`[mcp]`: the tools over MCP (Streamable HTTP at /mcp, `dbagent mcp` over stdio)."""

    model_config = ConfigDict(extra="forbid")

    # Where the approval card of a change an MCP client asks for is posted.
    approval_channel: str | None = None
    clients: list[McpClient] = Field(default_factory=list)

    @field_validator("approval_channel")
    @classmethod
    def _channel_id(cls, value: str | None) -> str | None:
        if value is not None and not _CHANNEL_ID.match(value):
            raise ValueError(f"{value!r} is not a Slack channel ID (C…/G…)")
        return value

    @model_validator(mode="after")
    def _distinct_clients(self) -> McpSettings:
        names: set[str] = set()
        tokens: set[str] = set()
        for client in self.clients:
            if client.name in names:
                raise ValueError(f"duplicate MCP client name {client.name!r}")
            token = client.token.get_secret_value()
            if token in tokens:
                raise ValueError(f"MCP client {client.name!r} shares its token with another")
            names.add(client.name)
            tokens.add(token)
        if self.clients and self.approval_channel is None:
            raise ValueError("approval_channel is required when [[mcp.clients]] are configured")
        return self

    @property
    def enabled(self) -> bool:
        return bool(self.clients)


class Settings(BaseSettings):
    """Everything the bot reads at start. Environment variables fill the top-level fields;
    `dbagent.toml` fills databases, approvals, channels and limits."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False)

    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_url: str | None = None
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_model: str = "gpt-4o-mini"
    port: int = 3000
    dbagent_config: Path = Path("dbagent.toml")
    dbagent_state_dir: Path = Path("state")
    # redis://host:port/db selects the Redis state backend; unset, state is embedded SQLite.
    dbagent_state_url: str | None = None
    # Signs grants, pending approvals and forwarded Stops in the store (bot.state.seal);
    # required with Redis.
    dbagent_state_key: SecretStr | None = None
    # One database without a file: its name is the URL's schema.
    dbagent_database_url: SecretStr | None = None
    dbagent_database_environment: Environment = Environment.DEVELOPMENT

    databases: list[DatabaseConfig] = Field(default_factory=list)
    approvals: Approvals = Field(default_factory=Approvals)
    # Channel ID → mode; channels not named here use `agent`, DMs always use `ask`.
    channels: dict[str, Mode] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    retention: Retention = Field(default_factory=Retention)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)

    @field_validator("databases")
    @classmethod
    def _unique_names(cls, value: list[DatabaseConfig]) -> list[DatabaseConfig]:
        seen: set[str] = set()
        for database in value:
            if database.name in seen:
                raise ValueError(f"duplicate database name {database.name!r}")
            seen.add(database.name)
        return value

    @field_validator("channels")
    @classmethod
    def _channel_ids(cls, value: dict[str, Mode]) -> dict[str, Mode]:
        for channel in value:
            if not _CHANNEL_ID.match(channel):
                raise ValueError(f"{channel!r} is not a Slack channel ID (C…/G…/D…)")
        return value

    def database(self, name: str) -> DatabaseConfig | None:
        return next((db for db in self.databases if db.name == name), None)

    def mode_for_channel(self, channel: str, *, is_dm: bool) -> Mode:
        if channel in self.channels:
            return self.channels[channel]
        return Mode.ASK if is_dm else Mode.AGENT


_FILE_SECTIONS = ("databases", "approvals", "channels", "limits", "retention", "slack", "mcp")


def _describe(error: ValidationError) -> str:
    """One line per problem, naming the field; the offending input is never echoed."""
    lines = []
    for problem in error.errors(include_input=False, include_url=False):
        location = ".".join(str(part) for part in problem["loc"]) or "config"
        message = problem["msg"].removeprefix("Value error, ")
        lines.append(f"{location}: {message}")
    return "; ".join(lines)


def _read_document(config_path: Path, *, required: bool) -> dict[str, Any]:
    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not required:
            return {}
        raise ConfigError(
            f"config file {config_path} not found (copy dbagent.example.toml to {config_path}, "
            "set DBAGENT_CONFIG to its path, or set DBAGENT_DATABASE_URL to run without one)"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {config_path} cannot be read: {exc.strerror}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {config_path} is not valid TOML: {exc}") from None
    unknown = sorted(set(document) - set(_FILE_SECTIONS))
    if unknown:
        raise ConfigError(f"{config_path}: unknown section {unknown[0]!r}")
    return {key: document[key] for key in _FILE_SECTIONS if key in document}


def _database_from_url(settings: Settings) -> DatabaseConfig | None:
    """DBAGENT_DATABASE_URL: one database, named after the URL's schema."""
    if settings.dbagent_database_url is None:
        return None
    url = settings.dbagent_database_url.get_secret_value()
    try:
        schema = ConnectionTarget.parse(url).schema_name
    except ValueError as exc:
        raise ConfigError(f"DBAGENT_DATABASE_URL: {exc}") from None
    if not schema:
        raise ConfigError(
            "DBAGENT_DATABASE_URL: the URL names no database (mysql://user:password@host:3306/"
            "schema); the database is named after it"
        )
    if settings.database(schema) is not None:
        raise ConfigError(
            f"DBAGENT_DATABASE_URL: a database named {schema!r} is also in "
            f"{settings.dbagent_config}"
        )
    try:
        return DatabaseConfig(
            name=schema,
            url=SecretStr(url),
            environment=settings.dbagent_database_environment,
            description="configured by DBAGENT_DATABASE_URL",
        )
    except ValidationError as exc:
        raise ConfigError(f"DBAGENT_DATABASE_URL: {_describe(exc)}") from None


def load_settings(path: Path | str | None = None, **overrides: Any) -> Settings:
    """Read the environment and the TOML file; raise ConfigError with a one-line reason.

    With DBAGENT_DATABASE_URL set, the file is optional (unless named by `path` or
    DBAGENT_CONFIG) and that URL adds one database, named after its schema.
    """
    named = path or os.environ.get("DBAGENT_CONFIG")
    config_path = Path(named or "dbagent.toml")
    required = bool(named) or not os.environ.get("DBAGENT_DATABASE_URL")
    values = _read_document(config_path, required=required)
    values.update(overrides)
    values["dbagent_config"] = config_path
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        raise ConfigError(f"{config_path}: {_describe(exc)}") from None
    extra = _database_from_url(settings)
    if extra is not None:
        settings.databases = [*settings.databases, extra]
    return settings
