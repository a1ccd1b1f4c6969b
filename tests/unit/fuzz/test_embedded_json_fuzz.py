"""Fuzzing the JSON the operator keeps inside annotations and Secrets, read back by pure code.

Association confs, the recreate annotation of a StatefulSet, the remote cluster API keys index,
the policies' soft-owner list, secure settings sources and settings documents are JSON strings in
annotations or Secret data. Anyone who may edit those objects may write anything there: any text,
any JSON, JSON nested deeper than Python's decoder recurses. Each reader must treat what it cannot
use as unusable (or refuse it with a ``ValueError``), never raise anything else.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stackflow.stack.apps.associations import confs_from_annotations
from stackflow.stack.associations.conf import parse_conf
from stackflow.stack.elasticsearch import remote_clusters, volumes
from stackflow.stack.elasticsearch.builder import file_settings_secret
from stackflow.stack.elasticsearch.keystore import policy_sources
from stackflow.stack.policies.stack_config.owners import SOFT_OWNER_REFS_ANNOTATION, secret_owners
from stackflow.stack.policies.stack_config.policy import POLICY_KIND
from stackflow.stack.policies.stack_config.reading import read_kb_policy_config
from stackflow.stack.policies.stack_config.secrets import SECURE_SETTINGS_ANNOTATION
from tests.unit.fuzz.strategies import FUZZ_SETTINGS, HOSTILE_STRINGS, json_values

NOW = datetime(2026, 3, 1, tzinfo=UTC)
#: JSON nested deeper than Python's decoder recurses (the annotation limit is 256 KiB).
DEEP_JSON = "[" * 5_000 + "]" * 5_000
TEXTS = st.one_of(json_values().map(json.dumps), HOSTILE_STRINGS, st.just(DEEP_JSON))


def _encoded(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _association_confs(text: str) -> object:
    obj = {"metadata": {"annotations": {"association.k8s.elastic.co/es-conf": text}}}
    return confs_from_annotations(obj)


def _recreate_steps(text: str) -> object:
    return volumes.recreate_steps({f"{volumes.RECREATE_ANNOTATION_PREFIX}es-es-m": text}, {})


def _remote_api_keys(text: str) -> object:
    secret = {"metadata": {"annotations": {remote_clusters.API_KEYS_ANNOTATION: text}}, "data": {}}
    return remote_clusters.read_stored_keys(secret)


def _secure_settings_sources(text: str) -> object:
    return policy_sources({"metadata": {"annotations": {SECURE_SETTINGS_ANNOTATION: text}}})


def _soft_owners(text: str) -> object:
    labels = {"eck.k8s.elastic.co/owner-kind": POLICY_KIND}
    secret = {"metadata": {"labels": labels, "annotations": {SOFT_OWNER_REFS_ANNOTATION: text}}}
    return secret_owners(secret)


def _kibana_policy_config(text: str) -> object:
    return read_kb_policy_config({"data": {"kibana.json": _encoded(text)}})


class _FileSettingsContext:
    """What ``file_settings_secret`` reads of a build: the current Secret's data and the clock."""

    name = "es"
    now = NOW

    def __init__(self, text: str) -> None:
        self.existing: dict[tuple[str, str], Any] = {}
        self.text = text

    def existing_secret_data(self, _name: str) -> dict[str, bytes]:
        return {"settings.json": self.text.encode()}

    def secret(self, name: str, data: dict[str, str], **_fields: Any) -> dict[str, Any]:
        return {"kind": "Secret", "metadata": {"name": name}, "data": data}


def _file_settings(text: str) -> object:
    return file_settings_secret(_FileSettingsContext(text))  # type: ignore[arg-type]


READERS: dict[str, Callable[[str], object]] = {
    "association conf annotation (apps)": _association_confs,
    "association conf (parse_conf)": parse_conf,
    "recreate annotation (volumes)": _recreate_steps,
    "remote cluster API keys annotation": _remote_api_keys,
    "secure settings sources annotation": _secure_settings_sources,
    "policy owner-refs annotation": _soft_owners,
    "Kibana policy config Secret": _kibana_policy_config,
    "file settings Secret": _file_settings,
}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_any_embedded_json_is_read_or_refused(reader: Callable[[str], object]) -> None:
    # Each reader: a smaller budget, the too-deep document always tried first.
    @settings(FUZZ_SETTINGS, max_examples=25)
    @given(TEXTS)
    @example(DEEP_JSON)
    def check(text: str) -> None:
        try:
            reader(text)
        except ValueError as error:
            refusal = str(error)
        else:
            refusal = "read"
        assert refusal.strip()

    check()
