"""Rendering the Helm chart without helm: its templates keep to a small subset of Go
templates, which this module translates to Jinja and renders with Helm's own meanings (toYaml,
nindent, quote, whitespace trimming). Anything outside the subset is an error, so a template
that would need helm to be understood cannot slip in unchecked.

The subset: `{{ .Values.a.b }}`, `.Release.Name`, `.Chart.Name`, pipelines through `quote`,
`nindent N`, `indent N`; `toYaml X`; `{{- if X }}`, `{{- if not X }}`, `{{- else }}`,
`{{- end }}`; trimming with `{{-` and `-}}`.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jinja2
import yaml

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "dbagent"
_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)
_REFERENCE = re.compile(r"^\.(Values|Release|Chart)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)$")


class UnsupportedTemplate(Exception):
    """The template uses Go template syntax this renderer does not know."""


def _reference(text: str) -> str:
    match = _REFERENCE.match(text)
    if match is None:
        raise UnsupportedTemplate(f"not a .Values/.Release/.Chart reference: {text!r}")
    return match.group(1) + match.group(2)


def _condition(text: str) -> str:
    if text.startswith("not "):
        return "not " + _reference(text[4:].strip())
    return _reference(text)


def _pipeline(text: str) -> str:
    first, *stages = [stage.strip() for stage in text.split("|")]
    words = first.split()
    if len(words) == 2 and words[0] == "toYaml":
        expression = f"{_reference(words[1])} | toYaml"
    elif len(words) == 1:
        expression = _reference(words[0])
    else:
        raise UnsupportedTemplate(f"unknown function in {first!r}")
    for stage in stages:
        name, *args = stage.split()
        if name == "quote" and not args:
            expression += " | quote"
        elif name in ("nindent", "indent") and len(args) == 1 and args[0].isdigit():
            expression += f" | {name}_({args[0]})"
        else:
            raise UnsupportedTemplate(f"unknown pipeline stage {stage!r}")
    return expression


def to_jinja(template: str) -> str:
    """The template in Jinja syntax; UnsupportedTemplate for anything outside the subset."""
    blocks: list[str] = []

    def translate(match: re.Match[str]) -> str:
        left, body, right = match.groups()
        words = body.split(maxsplit=1)
        keyword = words[0] if words else ""
        if keyword == "if" and len(words) == 2:
            blocks.append("if")
            return f"{{%{left} if {_condition(words[1])} {right}%}}"
        if keyword == "else" and len(words) == 1:
            return f"{{%{left} else {right}%}}"
        if keyword == "end" and len(words) == 1:
            if not blocks:
                raise UnsupportedTemplate("{{ end }} without a block")
            return f"{{%{left} end{blocks.pop()} {right}%}}"
        return f"{{{{{left} {_pipeline(body)} {right}}}}}"

    translated = _ACTION.sub(translate, template)
    if blocks:
        raise UnsupportedTemplate("a block is not closed")
    return translated


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=False).rstrip("\n")


def _indent(text: Any, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in str(text).split("\n"))


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )
    environment.filters["toYaml"] = _to_yaml
    environment.filters["indent_"] = _indent
    environment.filters["nindent_"] = lambda text, spaces: "\n" + _indent(text, spaces)
    environment.filters["quote"] = lambda value: json.dumps(str(value))
    return environment


def _merged(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def render(overrides: dict[str, Any] | None = None, release: str = "demo") -> list[dict[str, Any]]:
    """Every object the chart makes with values.yaml plus `overrides`, parsed from YAML."""
    values = _merged(yaml.safe_load((CHART / "values.yaml").read_text()), overrides or {})
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    context = {
        "Values": values,
        "Release": {"Name": release, "Namespace": "default"},
        "Chart": {"Name": chart["name"], "Version": chart["version"]},
    }
    environment = _environment()
    objects: list[dict[str, Any]] = []
    for path in sorted((CHART / "templates").glob("*.yaml")):
        text = environment.from_string(to_jinja(path.read_text())).render(context)
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects
