"""What every Elasticsearch child builder needs: the cluster, the current children, the clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stackflow.stack.certificates import CertificateSettings
from stackflow.stack.http_certificates import http_tls_requested
from stackflow.stack.labels import WATCHED_LABEL, es_cluster_labels
from stackflow.stack.objects import Manifest, child_metadata, decode_secret_data, opaque_secret
from stackflow.stack.version import Version

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
        return http_tls_requested(self.spec)

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
        return child_metadata(
            self.owner(),
            name=name,
            namespace=self.namespace,
            owner_kind=ES_KIND,
            labels=merged_labels,
            annotations=annotations,
            soft_owned=soft_owned,
        )

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
        metadata = self.metadata(
            name, labels={WATCHED_LABEL: "true", **(labels or {})}, soft_owned=soft_owned
        )
        return opaque_secret(metadata, data)
