"""What the minimal distribution cannot take, adapted where the runner writes a Pod's files (pure).

The distribution this runner uses (Elasticsearch's own integration-test build) has no ILM or SLM
module, so file settings naming ``ilm`` or ``slm`` fail to parse and the node never reports
itself ready. The operator writes both sections, empty, as ECK does; an empty section asks for
nothing, so it is dropped from the file the node reads. A non-empty one is kept, and the node
then reports the error as it would on any cluster without those modules.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

#: File-settings sections and the module that handles each, for the ones the distribution lacks.
SECTION_MODULES = {"ilm": "x-pack-ilm", "slm": "x-pack-slm"}
FILE_SETTINGS_DIR = "/usr/share/elasticsearch/config/operator"
FILE_SETTINGS_FILE = "settings.json"


def missing_sections(distribution_home: Path) -> frozenset[str]:
    """The file-settings sections no module of this distribution handles."""
    modules = distribution_home / "modules"
    return frozenset(
        section for section, module in SECTION_MODULES.items() if not (modules / module).is_dir()
    )


def file_settings(files: Mapping[str, bytes], missing: frozenset[str]) -> dict[str, bytes]:
    """``settings.json`` without the empty sections the distribution cannot parse."""
    result = dict(files)
    raw = files.get(FILE_SETTINGS_FILE)
    if raw is None or not missing:
        return result
    try:
        document = json.loads(raw)
    except ValueError:
        return result
    state = document.get("state") if isinstance(document, dict) else None
    if not isinstance(state, dict):
        return result
    dropped = {key for key in missing if key in state and not state[key]}
    if dropped:
        document["state"] = {k: v for k, v in state.items() if k not in dropped}
        result[FILE_SETTINGS_FILE] = json.dumps(document).encode()
    return result
