"""The file-based settings document Elasticsearch reads: its empty ``state``, the state's hash
and the versioning rule."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.documents import load_bounded_json

#: The lowest Elasticsearch version that reads the document (ECK's value).
FILE_SETTINGS_COMPATIBILITY = "8.4.0"


def empty_state() -> dict[str, Any]:
    """The file-settings ``state`` that configures nothing (every section present and empty)."""
    return {
        "cluster_settings": {},
        "snapshot_repositories": {},
        "slm": {},
        "role_mappings": {},
        "ilm": {},
        "ingest_pipelines": {},
        "index_templates": {"component_templates": {}, "composable_index_templates": {}},
    }


def state_hash(state: Mapping[str, Any]) -> str:
    """A stable hash of a file-settings ``state`` (keys sorted)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class FileSettings:
    """The file-settings document to write and the version it carries."""

    version: int
    hash: str
    document: str


def _current_document(settings_json: str | None) -> tuple[int | None, str | None]:
    """The version of the current document and the hash of the state it holds (None: unreadable)."""
    if not settings_json:
        return None, None
    try:
        document = load_bounded_json(settings_json)
        version = int(document["metadata"]["version"])
    except (ValueError, KeyError, TypeError):
        return None, None
    state = document.get("state") if isinstance(document, Mapping) else None
    return version, state_hash(state) if isinstance(state, Mapping) else None


def file_settings(
    state: Mapping[str, Any],
    *,
    current_document: str | None,
    current_hash: str | None,
    first_version: int,
) -> FileSettings:
    """The versioning rule: the version is kept while the hash of the state is unchanged, and
    bumped by one otherwise; ``first_version`` when the current Secret carries none.

    Elasticsearch applies a file whose version is higher than the one it applied last, so the
    version must grow with every change and must not move without one. The version is kept only
    when both the recorded hash and the state the document holds match: a document another
    writer replaced under the annotation (the Elasticsearch controller's empty one, written from
    an older read) would otherwise come back with new content under a version already applied.
    """
    digest = state_hash(state)
    current, held = _current_document(current_document)
    if current is not None and current_hash == digest and held == digest:
        version = current
    elif current is not None:
        version = current + 1
    else:
        version = first_version
    document = json.dumps(
        {
            "metadata": {"version": str(version), "compatibility": FILE_SETTINGS_COMPATIBILITY},
            "state": state,
        },
        sort_keys=True,
    )
    return FileSettings(version=version, hash=digest, document=document)
