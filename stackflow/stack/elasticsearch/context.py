"""What every Elasticsearch child builder needs: the cluster, the current children, the clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stackflow.stack.certificates import CertificateSettings
from stackflow.stack.elasticsearch.version import Version
from stackflow.stack.labels import WATCHED_LABEL, es_cluster_labels, soft_owner_labels
from stackflow.stack.objects import Manifest, controller_owner_reference, decode_secret_data

ExistingObjects = Mapping[tuple[str, str], Mapping[str, Any]]
"""Current objects in the cluster's namespace, keyed by ``(kind, name)``."""

ES_KIND = "Elasticsearch"


@dataclass(frozen=True)
class BuildContext:
    """Inputs shared by the builders of one Elasticsearch cluster's children."""

    es: Mapping[str, Any]
    version: Version
    existing: ExistingObjects
    now: datetime
    random_password: Callable[[], str]
    certificate_settings: CertificateSettings

    @property
    def name(self) -> str:
        """The cluster's name."""
        return str(self.es["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The cluster's namespace."""
        return str(self.es["metadata"].get("namespace", "default"))

    @property
    def spec(self) -> Mapping[str, Any]:
        """The cluster's spec."""
        spec: Mapping[str, Any] = self.es.get("spec") or {}
        return spec

    @property
    def http_tls_enabled(self) -> bool:
        """Whether the HTTP layer serves TLS (``spec.http.tls.selfSignedCertificate.disabled`` unset)."""
        tls = (self.spec.get("http") or {}).get("tls") or {}
        custom = (tls.get("certificate") or {}).get("secretName")
        disabled = bool((tls.get("selfSignedCertificate") or {}).get("disabled"))
        return bool(custom) or not disabled

    @property
    def http_scheme(self) -> str:
        """``https`` or ``http``."""
        return "https" if self.http_tls_enabled else "http"

    def existing_secret_data(self, name: str) -> dict[str, bytes]:
        """Return the decoded data of the current Secret ``name`` (empty when absent)."""
        return decode_secret_data(self.existing.get(("Secret", name)))

    def metadata(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> dict[str, Any]:
        """Return a child's metadata: cluster labels, then ``labels``, and the owner (hard or soft)."""
        merged_labels = es_cluster_labels(self.name)
        merged_labels.update(labels or {})
        metadata: dict[str, Any] = {"name": name, "namespace": self.namespace}
        if soft_owned:
            merged_labels.update(
                soft_owner_labels(namespace=self.namespace, name=self.name, kind=ES_KIND)
            )
        else:
            metadata["ownerReferences"] = [controller_owner_reference(self.owner())]
        metadata["labels"] = dict(sorted(merged_labels.items()))
        if annotations:
            metadata["annotations"] = dict(sorted(annotations.items()))
        return metadata

    def owner(self) -> Mapping[str, Any]:
        """The Elasticsearch object, with the apiVersion and kind filled in when missing."""
        return {
            "apiVersion": self.es.get("apiVersion", "elasticsearch.k8s.elastic.co/v1"),
            "kind": self.es.get("kind", ES_KIND),
            "metadata": self.es["metadata"],
        }

    def secret(
        self,
        name: str,
        data: Mapping[str, str],
        *,
        labels: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> Manifest:
        """Return a Secret manifest with base64 ``data`` (already encoded), labelled as watched."""
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": self.metadata(
                name, labels={WATCHED_LABEL: "true", **(labels or {})}, soft_owned=soft_owned
            ),
            "type": "Opaque",
            "data": dict(sorted(data.items())),
        }
