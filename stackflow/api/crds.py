"""apiextensions.k8s.io/v1 CustomResourceDefinitions for every ECK kind, generated from the models.

Served versions get the models' structural schema; versions ECK keeps but no longer serves (v1alpha1 of
Elasticsearch, Kibana and APM Server) get a schema that preserves everything, as they only exist so that
old stored objects stay readable. The output is deterministic, so the committed files under
``deploy/crds/`` can be compared with a fresh generation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from stackflow.api.kinds import KINDS, KindInfo
from stackflow.api.schema import PRESERVE, type_schema

CRD_API_VERSION = "apiextensions.k8s.io/v1"
GENERATED_BY_ANNOTATION = "stackflow.k8s.elastic.co/generated-by"
GENERATED_BY = "stackflow crds"


def resource_schema(info: KindInfo) -> dict[str, Any]:
    """The openAPIV3Schema of a served version: apiVersion, kind, metadata, spec, status."""
    fields = info.model.model_fields
    return {
        "description": " ".join((info.model.__doc__ or info.kind).split()),
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": model_schema_of(fields["spec"].annotation),
            "status": model_schema_of(fields["status"].annotation),
        },
    }


def model_schema_of(annotation: Any) -> dict[str, Any]:
    """The schema of a ``spec``/``status`` annotation (``Model`` or ``Model | None``)."""
    schema = type_schema(annotation)
    if schema.get("type") != "object":
        raise TypeError(f"spec/status must be a model, got {annotation!r}")
    return schema


def _unserved_schema() -> dict[str, Any]:
    return {"type": "object", PRESERVE: True}


def _version_entry(info: KindInfo, name: str, *, served: bool, storage: bool) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    if info.scale is not None:
        subresources["scale"] = {
            "labelSelectorPath": info.scale.label_selector_path,
            "specReplicasPath": info.scale.spec_replicas_path,
            "statusReplicasPath": info.scale.status_replicas_path,
        }
    entry: dict[str, Any] = {"name": name, "served": served, "storage": storage}
    if served:
        entry["additionalPrinterColumns"] = [c.to_object() for c in info.printer_columns]
        entry["schema"] = {"openAPIV3Schema": resource_schema(info)}
        entry["subresources"] = subresources
    else:
        entry["schema"] = {"openAPIV3Schema": _unserved_schema()}
    return entry


def crd_for(info: KindInfo) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": info.crd_name,
            "annotations": {GENERATED_BY_ANNOTATION: GENERATED_BY},
            "labels": {"app.kubernetes.io/name": "stackflow"},
        },
        "spec": {
            "group": info.group,
            "names": {
                "categories": list(info.categories),
                "kind": info.kind,
                "listKind": f"{info.kind}List",
                "plural": info.plural,
                "shortNames": list(info.short_names),
                "singular": info.singular,
            },
            "scope": "Namespaced",
            "versions": [
                _version_entry(info, v.name, served=v.served, storage=v.storage)
                for v in info.versions
            ],
        },
    }


def all_crds() -> list[dict[str, Any]]:
    """The CRDs of every ECK kind, in the kind table's order."""
    return [crd_for(info) for info in KINDS]


def crd_file_name(crd: dict[str, Any]) -> str:
    """``<group>_<plural>.yaml``, the file name of a CRD under ``deploy/crds/``."""
    spec = crd["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def to_yaml(crd: dict[str, Any]) -> str:
    """One CRD as a YAML document (stable key order, no line wrapping)."""
    return yaml.safe_dump(crd, sort_keys=False, default_flow_style=False, width=1_000_000)


def render_all() -> str:
    """Every CRD as one multi-document YAML stream."""
    return "".join(f"---\n{to_yaml(crd)}" for crd in all_crds())


def rendered_files() -> dict[str, str]:
    """File name → YAML text of every CRD, as committed under ``deploy/crds/``."""
    return {crd_file_name(crd): to_yaml(crd) for crd in all_crds()}


def write_files(out_dir: Path) -> list[Path]:
    """Write one YAML file per CRD into ``out_dir`` (created if missing); returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, text in rendered_files().items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
