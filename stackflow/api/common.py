"""ECK's shared building blocks (``pkg/apis/common/v1``): references, HTTP/TLS, secrets, status parts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stackflow.api.base import ApiModel, FreeForm

AssociationStatus = Literal["", "Pending", "Established", "Failed"]
"""The state of one association (``""`` is unknown)."""

AssociationStatusMap = dict[str, AssociationStatus]
"""Association states keyed ``"<namespace>/<name>"`` of the target."""

Health = Literal["red", "yellow", "green", "unknown"]
"""Health of an application as ECK reports it (Kibana & co only use red and green)."""


class ObjectSelector(ApiModel):
    """A reference to a managed object (``name``/``namespace``/``serviceName``) or an external one (``secretName``)."""

    name: str | None = None
    namespace: str | None = None
    service_name: str | None = None
    secret_name: str | None = None

    def is_external(self) -> bool:
        """True when the reference targets an unmanaged cluster through a Secret."""
        return bool(self.secret_name)

    def with_default_namespace(self, namespace: str) -> ObjectSelector:
        """This selector with ``namespace`` filled in when unset (references default to their own namespace)."""
        if self.namespace or self.is_external():
            return self
        return self.model_copy(update={"namespace": namespace})

    def key(self, default_namespace: str) -> str:
        """``"<namespace>/<name>"``, the key of association status maps."""
        return f"{self.namespace or default_namespace}/{self.name or self.secret_name or ''}"


class LocalObjectSelector(ApiModel):
    """A reference to a managed object by ``name`` (and optionally ``namespace``/``serviceName``)."""

    name: str | None = None
    namespace: str | None = None
    service_name: str | None = None


class ElasticsearchSelector(ObjectSelector):
    """An ObjectSelector to Elasticsearch, optionally with a client certificate."""

    client_certificate_secret_name: str | None = None


class FleetServerSelector(ObjectSelector):
    """An ObjectSelector to a Fleet Server Agent, optionally with a client certificate."""

    client_certificate_secret_name: str | None = None


class ElasticsearchOutputSelector(ElasticsearchSelector):
    """An Agent's Elasticsearch reference with the output name it configures."""

    output_name: str | None = None


class ElasticsearchClusterSelector(ElasticsearchSelector):
    """A Logstash Elasticsearch reference with the cluster name its pipelines use."""

    cluster_name: str


class SubjectAlternativeName(ApiModel):
    """One SAN of a self-signed certificate."""

    dns: str | None = None
    ip: str | None = None


class SelfSignedCertificate(ApiModel):
    """The operator-issued HTTP certificate: extra SANs, or disabled (plain HTTP)."""

    subject_alt_names: list[SubjectAlternativeName] | None = None
    disabled: bool | None = None


class SecretRef(ApiModel):
    """A reference to a Secret by name."""

    secret_name: str | None = None


class TLSOptions(ApiModel):
    """HTTP TLS: a self-signed certificate configuration or a user-provided certificate."""

    self_signed_certificate: SelfSignedCertificate | None = None
    certificate: SecretRef | None = None

    def enabled(self) -> bool:
        """False only when the self-signed certificate is explicitly disabled and none is provided."""
        disabled = self.self_signed_certificate is not None and bool(
            self.self_signed_certificate.disabled
        )
        return not disabled or bool(self.certificate and self.certificate.secret_name)


class ClientOptions(ApiModel):
    """TLS client authentication (enterprise only)."""

    authentication: bool | None = None


class TLSWithClientOptions(TLSOptions):
    """HTTP TLS with client certificate authentication."""

    client: ClientOptions | None = None


class ServiceTemplate(ApiModel):
    """A Service template: metadata and spec, merged into the operator's Service."""

    metadata: FreeForm | None = None
    spec: FreeForm | None = None


class HTTPConfig(ApiModel):
    """The HTTP layer of an application: its Service template and TLS settings."""

    service: ServiceTemplate | None = None
    tls: TLSOptions | None = None

    def tls_enabled(self) -> bool:
        """Whether the application serves HTTPS (the default)."""
        return self.tls is None or self.tls.enabled()


class HTTPConfigWithClientOptions(ApiModel):
    """HTTPConfig whose TLS also takes client authentication (Elasticsearch, Agent)."""

    service: ServiceTemplate | None = None
    tls: TLSWithClientOptions | None = None

    def tls_enabled(self) -> bool:
        """Whether the application serves HTTPS (the default)."""
        return self.tls is None or self.tls.enabled()


class KeyToPath(ApiModel):
    """Maps one Secret key to a path (secure settings)."""

    key: str
    path: str | None = None


class SecretSource(ApiModel):
    """A Secret whose entries become keystore (secure) settings."""

    secret_name: str
    entries: list[KeyToPath] | None = None


class ConfigSource(ApiModel):
    """Configuration read from a Secret."""

    secret_name: str | None = None


class ConfigMapOrSecretSource(ApiModel):
    """Configuration read from a Secret or a ConfigMap."""

    secret_name: str | None = None
    config_map_name: str | None = None


class Resources(ApiModel):
    """Shorthand requests/limits (cpu, memory) for the main container; overrides the podTemplate."""

    requests: FreeForm | None = None
    limits: FreeForm | None = None


class MonitoringTarget(ApiModel):
    """Where metrics or logs are shipped."""

    elasticsearch_refs: list[ObjectSelector] | None = None


class Monitoring(ApiModel):
    """Stack monitoring: metrics and logs shipped to Elasticsearch clusters."""

    metrics: MonitoringTarget | None = None
    logs: MonitoringTarget | None = None


class LabelSelectorRequirement(ApiModel):
    """One ``matchExpressions`` entry."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(ApiModel):
    """A Kubernetes LabelSelector."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class Condition(ApiModel):
    """A status condition as ECK writes it."""

    type: str
    status: str
    last_transition_time: str | None = None
    message: str | None = None


class DeploymentStatus(ApiModel):
    """The status shared by Deployment-based applications (Kibana, APM Server, …)."""

    selector: str | None = None
    count: int | None = None
    available_nodes: int | None = None
    version: str | None = None
    health: Health | None = None
    conditions: list[Condition] | None = None


class NodesStatus(ApiModel):
    """The status shared by Beat, Agent and Logstash: expected and available nodes, health."""

    version: str | None = None
    expected_nodes: int | None = None
    available_nodes: int | None = None
    health: Health | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None


class PodTemplateWorkload(ApiModel):
    """A DaemonSet or Deployment of Beats/Agent: its pod template and workload options."""

    pod_template: FreeForm | None = None
    replicas: int | None = None
    update_strategy: FreeForm | None = None
    strategy: FreeForm | None = None


class StatefulSetWorkload(PodTemplateWorkload):
    """An Agent StatefulSet: as a Deployment plus service name, pod policy and claims."""

    service_name: str | None = None
    pod_management_policy: str | None = None
    volume_claim_templates: list[FreeForm] | None = None


class StackApplicationSpec(ApiModel):
    """Fields every Deployment-based stack application spec shares (ECK repeats them per kind)."""

    version: str
    image: str | None = None
    count: int | None = Field(default=None, ge=0)
    config: FreeForm | None = None
    http: HTTPConfig | None = None
    resources: Resources | None = None
    pod_template: FreeForm | None = None
    revision_history_limit: int | None = None
    service_account_name: str | None = None
