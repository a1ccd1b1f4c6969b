"""Kubernetes protobuf for the HTTP layer: where the generated classes are, and when to use them.

kubectl's imperative commands (``create namespace``, ``create secret``, ``run``, ``expose``) send
``application/vnd.kubernetes.protobuf`` bodies and prefer protobuf answers. The message classes are
generated at build time (``make proto``, :mod:`kubesim.proto_build`) into ``.tools/kubeproto`` at
the repository root, or ``$KUBESIM_PROTO_DIR``; without them kubesim refuses protobuf bodies (415)
and answers JSON, as before. Only built-in kinds have messages: custom resources stay JSON, as on
a real API server. The conversion itself is :mod:`kubesim.proto_json`.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubesim.proto_json import INDEX_FORMAT, MAGIC, Catalog, ProtobufError, UnknownKindError

__all__ = [
    "MAGIC",
    "PROTOBUF",
    "ProtobufError",
    "UnavailableError",
    "UnknownKindError",
    "catalog",
    "decode_body",
    "encode_body",
    "prefers_protobuf",
    "proto_dir",
]

PROTOBUF = "application/vnd.kubernetes.protobuf"
ENV_DIR = "KUBESIM_PROTO_DIR"
_log = logging.getLogger("kubesim.protobuf")


class UnavailableError(Exception):
    """The generated classes are missing, stale or unimportable; the message says why."""


def proto_dir() -> Path:
    """Where the generated classes live: ``$KUBESIM_PROTO_DIR``, else ``.tools/kubeproto``."""
    override = os.environ.get(ENV_DIR)
    if override:
        return Path(override).resolve()
    return Path(__file__).resolve().parents[1] / ".tools" / "kubeproto"


# Loaded trees only: a missing tree is looked for again, so `make proto` helps a running kubesim.
_loaded: dict[Path, Catalog] = {}


def _load(directory: Path) -> Catalog | str:
    """The catalog of the tree at ``directory``, or why there is none."""
    if directory in _loaded:
        return _loaded[directory]
    hint = "run `make proto` to enable protobuf"
    index_path = directory / "index.json"
    if not index_path.is_file():
        return f"kubesim protobuf classes not generated ({directory}): {hint}"
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"kubesim protobuf index unreadable ({exc}): {hint}"
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        return f"kubesim protobuf classes in {directory} are from another kubesim: {hint}"
    # The generated modules import each other as ``k8s.io.api.…`` (protoc's naming), so their
    # root must be importable; appended, so it can shadow nothing already importable.
    if str(directory) not in sys.path:
        sys.path.append(str(directory))
    catalog = Catalog(index, importlib.import_module)
    try:
        catalog.unknown_class()
    except Exception as exc:  # an import of generated code can fail in many ways
        return f"kubesim protobuf classes in {directory} cannot be imported ({exc}): {hint}"
    _loaded[directory] = catalog
    return catalog


def catalog() -> Catalog:
    """The loaded catalog; :class:`UnavailableError` (with the reason) when there is none."""
    loaded = _load(proto_dir())
    if isinstance(loaded, str):
        raise UnavailableError(loaded)
    return loaded


def decode_body(raw: bytes) -> dict[str, Any]:
    """A protobuf request body as its JSON object (``apiVersion`` and ``kind`` from the envelope).

    Raises :class:`UnavailableError` without the classes, :class:`UnknownKindError` for a kind without a
    message, :class:`ProtobufError` for a malformed body.
    """
    return catalog().decode_object(raw)


def encode_body(body: Mapping[str, Any]) -> bytes | None:
    """``body`` (with ``apiVersion`` and ``kind``) as protobuf; ``None`` when it cannot be.

    ``None`` without the classes, for kinds without a message (custom resources, ``Status``) and
    for objects that do not fit their message: the caller then answers JSON, which every client
    that asks for protobuf also accepts.
    """
    try:
        return catalog().encode_object(body)
    except (UnavailableError, UnknownKindError):
        return None
    except ProtobufError as exc:
        _log.debug("answering JSON: the %s does not fit protobuf: %s", body.get("kind"), exc)
        return None


def prefers_protobuf(accept: str | None) -> bool:
    """Whether the Accept header's first choice kubesim can serve is plain protobuf.

    Media ranges are ordered like the API server's negotiation: by ``q``, then the more specific
    first, then as listed. Ranges with ``as=`` (Tables, discovery) are someone else's business.
    """
    if not accept:
        return False
    ranked: list[tuple[float, int, int, str]] = []
    for position, part in enumerate(accept.split(",")):
        media, *raw_params = (piece.strip() for piece in part.split(";"))
        params = dict(p.partition("=")[::2] for p in raw_params if p)
        if "as" in params:
            continue
        try:
            quality = float(params.pop("q", "1") or "1")
        except ValueError:
            quality = 1.0
        media = media.lower()
        if quality <= 0 or media not in (PROTOBUF, "application/json", "application/*", "*/*"):
            continue
        ranked.append((-quality, media.count("*"), position, media))
    return bool(ranked) and min(ranked)[3] == PROTOBUF
