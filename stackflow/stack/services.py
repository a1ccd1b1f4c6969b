"""Services of any owner: the operator's default spec with the user's service template merged over it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stackflow.models.objects import view
from stackflow.stack.labels import WATCHED_LABEL
from stackflow.stack.objects import Manifest, deep_merge, merge_named_lists


class MetadataContext(Protocol):
    """A build context that writes its children's metadata (ES's or an application's)."""

    def metadata(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> dict[str, Any]:
        """Return a child's metadata with the owner's labels and owner."""
        ...


def service(
    context: MetadataContext,
    name: str,
    *,
    default_spec: dict[str, Any],
    template: Mapping[str, Any] | None,
) -> Manifest:
    """Return a Service: the operator's defaults with the user's service template merged over them.

    Ports merge by name (the user's customise ours, others are added); labels and annotations of
    the template's metadata are kept, and the Service is labelled as watched.
    """
    template = template or {}
    user = view(template)
    user_spec: dict[str, Any] = dict(template.get("spec") or {})
    ports = merge_named_lists(
        default_spec.get("ports", []), list(user_spec.pop("ports", None) or [])
    )
    spec = deep_merge(default_spec, user_spec)
    spec["ports"] = ports
    labels = {**user.labels, WATCHED_LABEL: "true"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": context.metadata(name, labels=labels, annotations=user.annotations),
        "spec": spec,
    }
