"""A policy's ``spec.variablesFrom`` sources, the variables they hold and their ``${VAR}``
substitution in the policy's settings."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from stackflow.stack.policies.stack_config.policy import parse_policy
from stackflow.stack.policies.stack_config.variables import (
    VariableSource,
    substitute_variables,
    variable_sources,
    variables_of,
)
from tests.unit.stack_config_policies import policy_obj

VARIABLES = {"HOST": "es.example", "QUOTE": 'say "hi"', "EMPTY": ""}

# (value, substituted)
SUBSTITUTION: list[tuple[Any, Any]] = [
    ("${HOST}", "es.example"),
    ("https://${HOST}:9200", "https://es.example:9200"),
    ("${MISSING}", "${MISSING}"),  # unknown: left as written (may be the Pod's env var)
    ("${MISSING:-fallback}", "fallback"),
    ("${HOST:-fallback}", "es.example"),
    ("${EMPTY:-fallback}", ""),  # defined (even empty) wins the default
    ("${QUOTE}", 'say "hi"'),  # inserted as text: stays one string
    ("$HOST", "$HOST"),  # only the braced form
    ({"${HOST}.enabled": ["${HOST}", 3, True]}, {"es.example.enabled": ["es.example", 3, True]}),
    (7, 7),
]


@pytest.mark.parametrize(("value", "expected"), SUBSTITUTION)
def test_substitute_variables(value: Any, expected: Any) -> None:
    assert substitute_variables(value, VARIABLES) == expected


def test_variables_are_substituted_in_the_settings_only() -> None:
    obj = policy_obj(
        "team-a",
        "p",
        {
            "secureSettings": [{"secretName": "${HOST}"}],
            "elasticsearch": {"clusterSettings": {"a": "${HOST}"}},
            "kibana": {"config": {"b": "${HOST}"}},
        },
    )
    parsed = parse_policy(obj, VARIABLES)
    assert parsed.spec["elasticsearch"] == {"clusterSettings": {"a": "es.example"}}
    assert parsed.spec["kibana"] == {"config": {"b": "es.example"}}
    assert parsed.spec["secureSettings"] == [{"secretName": "${HOST}"}]
    assert obj["spec"]["elasticsearch"] == {"clusterSettings": {"a": "${HOST}"}}  # not mutated


def test_variable_sources_and_their_values() -> None:
    obj = policy_obj(
        "team-a",
        "p",
        {
            "variablesFrom": [
                {"kind": "ConfigMap", "name": "vars"},
                {
                    "kind": "Secret",
                    "name": "creds",
                    "namespace": "elastic-system",
                    "optional": True,
                },
            ]
        },
    )
    sources = variable_sources(obj)
    assert sources == [
        VariableSource("ConfigMap", "team-a", "vars", False),
        VariableSource("Secret", "elastic-system", "creds", True),
    ]
    config_map = {"data": {"A": "1"}}
    secret = {"data": {"B": base64.b64encode(b"two").decode()}}
    assert variables_of(sources[0], config_map) == {"A": "1"}
    assert variables_of(sources[1], secret) == {"B": "two"}
