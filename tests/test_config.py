"""Configuration: good files load; bad ones fail with one line naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, Environment, Mode, load_settings

GOOD = """
[[databases]]
name = "shop-staging"
url = "mysql://agent:${SHOP_PW}@db-staging:3306/shop"
environment = "staging"
description = "Orders and customers, staging copy"
read_url = "mysql://reader:${SHOP_PW}@replica:3307/shop"

[[databases]]
name = "shop-prod"
url = "mysql://agent@db-prod/shop"
environment = "production"

[approvals]
approvers = ["U0123ABCD", "S0ONCALL"]

[channels]
C0ASKONLY = "ask"

[limits]
statement_timeout_s = 5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "dbagent.toml"
    path.write_text(text)
    return path


def test_a_good_file_loads_with_env_references_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PW", "s3cr:t@pw")
    settings = load_settings(write(tmp_path, GOOD))
    staging = settings.database("shop-staging")
    assert staging is not None
    assert staging.environment is Environment.STAGING
    assert staging.target.host == "db-staging"
    assert staging.target.password.get_secret_value() == "s3cr:t@pw"
    assert staging.read_target.host == "replica" and staging.read_target.port == 3307
    assert staging.schema_name == "shop"
    assert settings.approvals.approvers == ["U0123ABCD", "S0ONCALL"]
    assert settings.limits.statement_timeout_s == 5
    assert settings.limits.default_rows == 50


def test_channel_modes_default_to_agent_and_dms_to_ask(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PW", "x")
    settings = load_settings(write(tmp_path, GOOD))
    assert settings.mode_for_channel("C0ASKONLY", is_dm=False) is Mode.ASK
    assert settings.mode_for_channel("C0OTHER", is_dm=False) is Mode.AGENT
    assert settings.mode_for_channel("D0DM", is_dm=True) is Mode.ASK


def test_the_password_never_appears_in_reprs(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PW", "hunter2-secret")
    settings = load_settings(write(tmp_path, GOOD))
    staging = settings.database("shop-staging")
    assert staging is not None
    for text in (repr(settings), str(settings), repr(staging), str(staging.target)):
        assert "hunter2-secret" not in text


def test_the_config_path_comes_from_dbagent_config(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PW", "x")
    path = write(tmp_path, GOOD)
    monkeypatch.setenv("DBAGENT_CONFIG", str(path))
    assert load_settings().database("shop-prod") is not None


BAD_CONFIGS = [
    # (toml, words the one-line error must contain, reason)
    (
        '[[databases]]\nname = "a"\nurl = "mysql://u@h/d"\nenvironment = "prod"\n',
        ["databases.0.environment"],
        "an unknown environment names the field",
    ),
    (
        '[[databases]]\nname = "a"\nurl = "mysql://u@h/d"\nenvironment = "staging"\n'
        '[[databases]]\nname = "a"\nurl = "mysql://u@h/d"\nenvironment = "staging"\n',
        ["databases", "duplicate database name 'a'"],
        "two databases with one name",
    ),
    (
        '[[databases]]\nname = "a"\nurl = "postgres://u:pw-LEAK@h/d"\nenvironment = "staging"\n',
        ["databases.0.url", "mysql://"],
        "a URL of another scheme",
    ),
    (
        '[[databases]]\nname = "a"\nurl = "mysql://u:pw-LEAK@h:notaport/d"\n'
        'environment = "staging"\n',
        ["databases.0.url", "malformed"],
        "a malformed URL",
    ),
    (
        '[[databases]]\nname = "a"\nurl = "mysql://u@h/d"\nenvironment = "staging"\n'
        'colour = "blue"\n',
        ["databases.0.colour"],
        "an unknown key is a typo, not silence",
    ),
    (
        '[[databases]]\nname = "a"\nurl = "mysql://u:${NOT_SET_ANYWHERE}@h/d"\n'
        'environment = "staging"\n',
        ["databases.0.url", "NOT_SET_ANYWHERE"],
        "a ${VAR} that is not set",
    ),
    (
        '[approvals]\napprovers = ["alice"]\n',
        ["approvals.approvers", "'alice'"],
        "an approver that is not a Slack ID",
    ),
    ('[channels]\ngeneral = "ask"\n', ["channels", "'general'"], "a channel name, not an ID"),
    ('[channels]\nC0123 = "write"\n', ["channels.C0123"], "an unknown mode"),
    ("[limits]\nmax_rows = 0\n", ["limits.max_rows"], "a limit out of range"),
    ("[slak]\ntoken = 1\n", ["unknown section 'slak'"], "an unknown section"),
    ("[slack]\ntoken = 1\n", ["slack.token"], "an unknown key in a known section"),
    ("[[databases]\n", ["not valid TOML"], "broken TOML"),
]


@pytest.mark.parametrize(("text", "words", "reason"), BAD_CONFIGS, ids=[r[2] for r in BAD_CONFIGS])
def test_bad_configuration_fails_with_one_line_naming_the_field(tmp_path, text, words, reason):
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    message = str(caught.value)
    assert "\n" not in message, reason
    assert "LEAK" not in message, "a password must never reach an error message"
    for word in words:
        assert word in message, f"{reason}: {message}"


def test_a_missing_file_says_which_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_one_database_url_needs_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DBAGENT_CONFIG", raising=False)
    monkeypatch.setenv("DBAGENT_DATABASE_URL", "mysql://agent:pw@db:3306/shop")
    settings = load_settings()
    [database] = settings.databases
    assert database.name == "shop"
    assert database.environment is Environment.DEVELOPMENT
    assert database.target.host == "db"


def test_the_database_urls_environment_comes_from_its_own_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DBAGENT_CONFIG", raising=False)
    monkeypatch.setenv("DBAGENT_DATABASE_URL", "mysql://agent@db/shop")
    monkeypatch.setenv("DBAGENT_DATABASE_ENVIRONMENT", "production")
    assert load_settings().databases[0].environment is Environment.PRODUCTION


def test_the_database_url_adds_to_the_files_databases(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_PW", "x")
    monkeypatch.setenv("DBAGENT_DATABASE_URL", "mysql://agent@db/scratch")
    settings = load_settings(write(tmp_path, GOOD))
    assert [db.name for db in settings.databases] == ["shop-staging", "shop-prod", "scratch"]


URL_PROBLEMS = [
    # (DBAGENT_DATABASE_URL, words the one-line error must contain, reason)
    ("mysql://agent:pw-LEAK@db:3306/", ["DBAGENT_DATABASE_URL", "names no database"], "no schema"),
    ("postgres://agent:pw-LEAK@db/shop", ["DBAGENT_DATABASE_URL", "mysql://"], "another scheme"),
    ("mysql://agent:pw-LEAK@db/shop-prod", ["DBAGENT_DATABASE_URL", "also in"], "a name taken"),
]


@pytest.mark.parametrize(("url", "words", "reason"), URL_PROBLEMS, ids=[r[2] for r in URL_PROBLEMS])
def test_a_bad_database_url_fails_with_one_line(tmp_path, monkeypatch, url, words, reason):
    monkeypatch.setenv("SHOP_PW", "x")
    monkeypatch.setenv("DBAGENT_DATABASE_URL", url)
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, GOOD))
    message = str(caught.value)
    assert "\n" not in message and "LEAK" not in message, reason
    for word in words:
        assert word in message, f"{reason}: {message}"


def test_a_named_config_file_is_required_even_with_a_database_url(tmp_path, monkeypatch):
    monkeypatch.setenv("DBAGENT_DATABASE_URL", "mysql://agent@db/shop")
    monkeypatch.setenv("DBAGENT_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="not found"):
        load_settings()


def test_the_example_configuration_loads(monkeypatch):
    example = Path(__file__).resolve().parent.parent / "dbagent.example.toml"
    monkeypatch.delenv("DBAGENT_DATABASE_URL", raising=False)
    settings = load_settings(example)
    assert settings.databases == []


# -- [mcp] --------------------------------------------------------------------------------

MCP_TOKEN = "t" * 40
MCP_GOOD = """
[mcp]
approval_channel = "C0CHANGES"

[[mcp.clients]]
name = "alice-laptop"
token = "${MCP_TOKEN_ALICE}"
user = "U0ALICE"
"""


def test_mcp_clients_load_with_their_token_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TOKEN_ALICE", MCP_TOKEN)
    settings = load_settings(write(tmp_path, MCP_GOOD))
    [client] = settings.mcp.clients
    assert (client.name, client.user) == ("alice-laptop", "U0ALICE")
    assert client.token.get_secret_value() == MCP_TOKEN
    assert MCP_TOKEN not in repr(settings)
    assert settings.mcp.enabled and settings.mcp.approval_channel == "C0CHANGES"


def test_without_mcp_clients_mcp_is_off(tmp_path):
    assert not load_settings(write(tmp_path, "")).mcp.enabled


def _client(name: str = "a", token: str = MCP_TOKEN, user: str = "U0ALICE") -> str:
    return f'[[mcp.clients]]\nname = "{name}"\ntoken = "{token}"\nuser = "{user}"\n'


_CHANNEL = '[mcp]\napproval_channel = "C0CHANGES"\n'
BAD_MCP = [
    (_client(), ["mcp", "approval_channel is required"], "clients without an approval channel"),
    (_CHANNEL + _client(token="short-LEAK"), ["mcp.clients.0.token", "32"], "a short token"),
    (
        _CHANNEL + _client(token="${NOT_SET_ANYWHERE}"),
        ["mcp.clients.0.token", "NOT_SET_ANYWHERE"],
        "a ${VAR} that is not set",
    ),
    (_CHANNEL + _client(user="alice"), ["mcp.clients.0.user"], "a user name, not an ID"),
    (_CHANNEL + _client(user="S0GROUP"), ["mcp.clients.0.user"], "a user group cannot ask"),
    (_CHANNEL + _client(name="a b"), ["mcp.clients.0.name"], "a name with a space"),
    (
        _CHANNEL + _client() + _client(token="u" * 40),
        ["duplicate MCP client name 'a'"],
        "two clients of one name",
    ),
    (
        _CHANNEL + _client(token="L" * 32 + "LEAK") + _client(name="b", token="L" * 32 + "LEAK"),
        ["'b' shares its token"],
        "two clients of one token",
    ),
    ('[mcp]\napproval_channel = "changes"\n', ["mcp.approval_channel"], "a channel name"),
    ("[mcp]\nport = 1\n", ["mcp.port"], "an unknown key"),
]


@pytest.mark.parametrize(("text", "words", "reason"), BAD_MCP, ids=[r[2] for r in BAD_MCP])
def test_bad_mcp_configuration_fails_with_one_line(tmp_path, text, words, reason):
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    message = str(caught.value)
    assert "\n" not in message, reason
    assert "LEAK" not in message, "a token must never reach an error message"
    for word in words:
        assert word in message, f"{reason}: {message}"
