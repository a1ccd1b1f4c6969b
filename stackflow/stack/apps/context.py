"""What every builder of one application's children needs: the object, its kind, its current children.

The bottom of the package's kind layer: :class:`AppKind` (the row type of the table in
:mod:`stackflow.stack.apps.kinds`), :class:`AppParts` (what a kind's ``parts`` hook returns) and
:class:`AppContext` (what the hooks and builders read). A kind's hook takes a context and a context
holds its kind, so the three live here together; the hooks import this module and the table imports
the hooks, so every import points down.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stackflow.stack.apps.associations import AssociationConf
from stackflow.stack.certificates import CertificateSettings
from stackflow.stack.http_certificates import http_tls_requested
from stackflow.stack.labels import TYPE_LABEL, WATCHED_LABEL
from stackflow.stack.naming import Namer
from stackflow.stack.objects import Manifest, child_metadata, decode_secret_data, opaque_secret

ExistingObjects = Mapping[tuple[str, str], Mapping[str, Any]]
"""Current objects in the application's namespace, keyed by ``(kind, name)``."""

HTTP_CERTS_DIR = "/mnt/elastic-internal/http-certs"
"""Where the HTTP certificate Secret is mounted in every HTTP-serving container."""


@dataclass
class AppParts:
    """What one kind adds to the shared mechanism (returned by the kind's ``parts`` hook).

    ``config`` holds the operator's settings (association settings included); the user's
    ``configRef`` and ``spec.config`` are merged over them by the builder.
    """

    config: dict[str, Any] = field(default_factory=dict)
    env: list[dict[str, Any]] = field(default_factory=list)
    env_from: list[dict[str, Any]] = field(default_factory=list)
    args: list[str] | None = None
    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    extra_config_data: dict[str, bytes] = field(default_factory=dict)
    """Further keys of the config Secret (e.g. Kibana's ``telemetry.yml``)."""
    secrets: list[Manifest] = field(default_factory=list)
    """Further Secrets the pods depend on (their content is part of the config hash)."""
    services: list[Manifest] = field(default_factory=list)


DEPLOYMENT = "Deployment"
STATEFUL_SET = "StatefulSet"
DAEMON_SET = "DaemonSet"
"""The workload kinds an application runs as."""


def _always(_spec: Mapping[str, Any]) -> bool:
    return True


def _no_parts(_context: AppContext) -> AppParts:
    return AppParts()


@dataclass(frozen=True)
class ClaimTemplate:
    """A default volume claim template of a StatefulSet-based kind and where it is mounted."""

    name: str
    storage: str
    mount_path: str


@dataclass(frozen=True)
class AppKind:
    """One stack application kind (reference §1 and §2)."""

    kind: str
    api_version: str
    short: str
    type_label: str
    label_prefix: str
    container_name: str
    image_repository: str
    config_file: str
    config_path: str
    """Where the config file is mounted (as a single file, ``subPath``)."""
    default_memory: str
    http_port: int | None = None
    http_tls: bool = True
    http_service_parts: tuple[str, ...] = ("http",)
    http_port_name: str | None = None
    """Name of the HTTP port on the container and the Service; ``None``: the scheme."""
    serves_http: Callable[[Mapping[str, Any]], bool] = _always
    readiness_path: str | None = None
    workload_parts: tuple[str, ...] = ()
    workload_kind: str = DEPLOYMENT
    workload_sections: Mapping[str, str] = field(default_factory=dict)
    """Spec sections that each choose a workload kind (``daemonSet`` → DaemonSet); empty: fixed."""
    config_secret_parts: tuple[str, ...] = ("config",)
    claim_template: ClaimTemplate | None = None
    automount_service_account_token: bool | None = None
    user_services: bool = False
    """Whether ``spec.services[]`` defines extra Services (Logstash)."""
    log_module: str | None = None
    """Filebeat's autodiscover hint on the Pods (``co.elastic.logs/module``), as ECK sets it."""
    parts: Callable[[AppContext], AppParts] = _no_parts

    @property
    def name_label(self) -> str:
        """The label holding the owner's name (``kibana.k8s.elastic.co/name``)."""
        return f"{self.label_prefix}/name"

    @property
    def version_label(self) -> str:
        """The pod label holding the stack version."""
        return f"{self.label_prefix}/version"

    @property
    def deployment_status(self) -> bool:
        """Whether the status is ECK's DeploymentStatus (``count``/``availableNodes``) rather than
        ``expectedNodes``/``availableNodes`` (Beat, Agent, Logstash)."""
        return self.workload_kind == DEPLOYMENT and not self.workload_sections

    @property
    def config_hash_annotation(self) -> str:
        """The pod-template annotation whose change rolls the pods when the config changes."""
        return f"{self.label_prefix}/config-hash"


@dataclass(frozen=True)
class AppContext:
    """Inputs shared by the builders of one application's children."""

    kind: AppKind
    obj: Mapping[str, Any]
    existing: ExistingObjects
    now: datetime
    associations: tuple[AssociationConf, ...]
    random_secret: Callable[[], str]
    certificate_settings: CertificateSettings

    @property
    def name(self) -> str:
        """The application's name."""
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The application's namespace."""
        return str(self.obj["metadata"].get("namespace") or "default")

    @property
    def spec(self) -> Mapping[str, Any]:
        """The application's spec (empty when missing)."""
        spec: Mapping[str, Any] = self.obj.get("spec") or {}
        return spec

    @property
    def version(self) -> str:
        """The requested stack version."""
        return str(self.spec.get("version", ""))

    @property
    def beat_type(self) -> str:
        """The Beat type (``filebeat``…); empty for other kinds."""
        return str(self.spec.get("type", ""))

    def render(self, template: str) -> str:
        """Fill a kind-table template (``{type}`` is the Beat type)."""
        return template.format(type=self.beat_type)

    @property
    def namer(self) -> Namer:
        """ECK's Namer for this kind's short name."""
        return Namer(self.kind.short)

    def child_name(self, *parts: str) -> str:
        """Return ``<name>-<short>[-<part>…]``."""
        return self.namer.suffix(self.name, *(self.render(part) for part in parts))

    @property
    def serves_http(self) -> bool:
        """Whether this object gets an HTTP Service (Agent: only as a Fleet Server)."""
        return self.kind.http_port is not None and self.kind.serves_http(self.spec)

    @property
    def http_tls_enabled(self) -> bool:
        """Whether the HTTP endpoint uses TLS (unless ``selfSignedCertificate.disabled``)."""
        if not self.serves_http or not self.kind.http_tls:
            return False
        return http_tls_requested(self.spec)

    @property
    def http_scheme(self) -> str:
        """``https`` or ``http``."""
        return "https" if self.http_tls_enabled else "http"

    def association(self, slug: str) -> AssociationConf | None:
        """Return the association conf whose annotation slug is ``slug`` (``es``, ``kb``…)."""
        return next((conf for conf in self.associations if conf.slug == slug), None)

    def selector_labels(self) -> dict[str, str]:
        """Return the labels selecting this object's pods: type and name."""
        return {TYPE_LABEL: self.kind.type_label, self.kind.name_label: self.name}

    def existing_secret_data(self, name: str) -> dict[str, bytes]:
        """Return the decoded data of the current Secret ``name`` (empty when absent)."""
        return decode_secret_data(self.existing.get(("Secret", name)))

    def owner(self) -> Mapping[str, Any]:
        """The application object, with apiVersion and kind filled in when missing."""
        return {
            "apiVersion": self.obj.get("apiVersion") or self.kind.api_version,
            "kind": self.obj.get("kind") or self.kind.kind,
            "metadata": self.obj["metadata"],
        }

    def metadata(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> dict[str, Any]:
        """Return a child's metadata: type and name labels, ``labels``, and the owner (hard or soft)."""
        merged_labels = dict(labels or {})
        merged_labels.update(self.selector_labels())
        return child_metadata(
            self.owner(),
            name=name,
            namespace=self.namespace,
            owner_kind=self.kind.kind,
            labels=merged_labels,
            annotations=annotations,
            soft_owned=soft_owned,
        )

    def secret(
        self,
        name: str,
        data: Mapping[str, str],
        *,
        labels: Mapping[str, str] | None = None,
        soft_owned: bool = False,
    ) -> Manifest:
        """Return an Opaque Secret with base64 ``data`` (already encoded), labelled as watched."""
        metadata = self.metadata(
            name, labels={**(labels or {}), WATCHED_LABEL: "true"}, soft_owned=soft_owned
        )
        return opaque_secret(metadata, data)
