"""The Helm chart, rendered offline (tests/deploy/helm_render.py: no helm binary or cluster is
reachable here): N replicas on Redis, the Secret, dbagent.toml from a ConfigMap, probes on
/health, a PodDisruptionBudget and an optional ServiceMonitor, and what each value changes."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import load_settings
from tests.deploy.helm_render import CHART, UnsupportedTemplate, render, to_jinja


def only(objects: list[dict[str, Any]], kind: str, name: str = "demo-dbagent") -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [bot] = only(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return bot


def test_the_default_values_make_a_deployment_of_two_replicas_on_redis() -> None:
    objects = render()
    assert sorted(o["kind"] for o in objects) == [
        "ConfigMap",
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "Secret",
        "Service",
    ]
    deployment = only(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    secret = only(objects, "Secret")
    assert secret["stringData"]["DBAGENT_STATE_URL"].startswith("redis://")
    for key in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "OPENAI_API_KEY"):
        assert key in secret["stringData"]
    sources = container(objects)["envFrom"]
    assert {"secretRef": {"name": "demo-dbagent"}} in sources
    assert {"configMapRef": {"name": "demo-dbagent-env"}} in sources


def test_probes_ask_health_on_the_port_the_bot_listens_on() -> None:
    bot = container(render({"port": 8080}))
    env = {item["name"]: item.get("value") for item in bot["env"]}
    assert env["PORT"] == "8080"
    assert bot["ports"] == [{"name": "http", "containerPort": 8080}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert bot[probe]["httpGet"] == {"path": "/health", "port": "http"}


def test_the_pod_runs_unprivileged_on_a_read_only_root() -> None:
    objects = render()
    pod = only(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    bot = container(objects)
    assert bot["securityContext"]["readOnlyRootFilesystem"] is True
    assert bot["securityContext"]["allowPrivilegeEscalation"] is False
    # What it writes goes to volumes: the audit journal, and /tmp (metrics of several workers).
    mounts = {m["mountPath"]: m["name"] for m in bot["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for writable in ("/var/lib/dbagent", "/tmp"):
        assert "emptyDir" in volumes[mounts[writable]]


def test_dbagent_toml_comes_from_the_config_map_and_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render()
    bot = container(objects)
    env = {item["name"]: item.get("value") for item in bot["env"]}
    [mount] = [m for m in bot["volumeMounts"] if m["name"] == "config"]
    assert env["DBAGENT_CONFIG"] == f"{mount['mountPath']}/dbagent.toml"
    text = only(objects, "ConfigMap")["data"]["dbagent.toml"]
    assert tomllib.loads(text)["databases"][0]["name"] == "shop-staging"
    (tmp_path / "dbagent.toml").write_text(text)
    monkeypatch.setenv("DBAGENT_CONFIG", str(tmp_path / "dbagent.toml"))
    monkeypatch.setenv("SHOP_STAGING_PASSWORD", "from-the-secret")
    settings = load_settings()
    assert [db.name for db in settings.databases] == ["shop-staging"]


# (values, what changes, reason)
VALUES = [
    ({"replicaCount": 5}, lambda o: only(o, "Deployment")["spec"]["replicas"] == 5, "replicas"),
    (
        {"existingSecret": "dbagent-prod"},
        lambda o: (
            not [x for x in o if x["kind"] == "Secret"]
            and {"secretRef": {"name": "dbagent-prod"}} in container(o)["envFrom"]
        ),
        "a Secret of one's own: none made, that one used",
    ),
    (
        {"podDisruptionBudget": {"enabled": False}},
        lambda o: not [x for x in o if x["kind"] == "PodDisruptionBudget"],
        "no PodDisruptionBudget",
    ),
    (
        {"otlpEndpoint": "http://otel:4318"},
        lambda o: (
            {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://otel:4318"}
            in container(o)["env"]
        ),
        "traces on",
    ),
    (
        {},
        lambda o: all(e["name"] != "OTEL_EXPORTER_OTLP_ENDPOINT" for e in container(o)["env"]),
        "traces off by default",
    ),
    (
        {"env": {"OPENAI_MODEL": "qwen2.5:14b"}},
        lambda o: only(o, "ConfigMap", "demo-dbagent-env")["data"]["OPENAI_MODEL"] == "qwen2.5:14b",
        "plain settings in their ConfigMap",
    ),
    (
        {"extraSecretEnv": {"SHOP_STAGING_PASSWORD": "s3cret"}},
        lambda o: only(o, "Secret")["stringData"]["SHOP_STAGING_PASSWORD"] == "s3cret",
        "database passwords in the Secret",
    ),
]


@pytest.mark.parametrize(("values", "holds", "reason"), VALUES, ids=[v[-1] for v in VALUES])
def test_values_change_what_they_say(values: dict[str, Any], holds: Any, reason: str) -> None:
    assert holds(render(values)), reason


def test_the_service_monitor_scrapes_metrics_of_the_service_when_enabled() -> None:
    objects = render({"serviceMonitor": {"enabled": True, "interval": "15s"}})
    monitor = only(objects, "ServiceMonitor")
    service = only(objects, "Service")
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "15s"}]
    assert service["spec"]["ports"][0]["name"] == "http"
    labels = service["metadata"]["labels"]
    assert all(labels[k] == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())


def test_selectors_match_the_pods() -> None:
    objects = render()
    pod_labels = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    selectors = [
        only(objects, "Deployment")["spec"]["selector"]["matchLabels"],
        only(objects, "Service")["spec"]["selector"],
        only(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
    ]
    for selector in selectors:
        assert selector and all(pod_labels[k] == v for k, v in selector.items())


# (template text, why the renderer must refuse it)
UNSUPPORTED = [
    ('{{ include "dbagent.name" . }}', "helpers need helm"),
    ("{{ .Values.x | b64enc }}", "a function the renderer does not model"),
    ("{{- range .Values.list }}x{{- end }}", "range"),
    ("{{- if .Values.x }}open", "a block left open"),
]


@pytest.mark.parametrize(("text", "reason"), UNSUPPORTED, ids=[r for _, r in UNSUPPORTED])
def test_a_template_outside_the_checked_subset_is_refused(text: str, reason: str) -> None:
    with pytest.raises(UnsupportedTemplate):
        to_jinja(text)


def test_the_chart_has_what_helm_needs() -> None:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert meta["apiVersion"] == "v2" and meta["name"] == "dbagent"
    assert {"version", "appVersion"} <= set(meta)
