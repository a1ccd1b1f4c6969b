"""The operator configuration: ECK's keys in a YAML file, overridable by environment variables.

``load_config(path, environ)`` reads the file (kebab-case keys, as ECK's ``eck.yaml``), applies
``STACKFLOW_<KEY_IN_UPPER_SNAKE>`` overrides and validates the result. Every problem becomes a
`ConfigError` whose message is one line naming the key and the problem, so that ``stackflow run``
can print it and exit with status 2 before anything starts.

The file is read with bounds, so that no content can take the operator's memory or stack: at most
`MAX_CONFIG_BYTES`, no YAML anchors or aliases (an alias bomb of a few hundred bytes expands to
gigabytes), at most `MAX_NESTING` levels deep, no key given twice in one mapping, and integers
and booleans of their own type (``webhook-port: true`` is refused, not read as port 1).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from stackflow.codec import PayloadKeyError, read_key_file
from stackflow.models.documents import DocumentYAMLError, load_bounded_yaml
from stackflow.scope.matcher import MUTUALLY_EXCLUSIVE_MESSAGE, ScopeConfig, ScopeMode
from stackflow.scope.selector import LabelSelector, SelectorError, selector_data_from_string
from stackflow.scope.validation import describe_validation_error, quote

ENV_PREFIX = "STACKFLOW_"
REDACTED = "<redacted>"

#: The largest configuration file read (ECK's are a few hundred bytes).
MAX_CONFIG_BYTES = 1024 * 1024
#: The deepest nesting of mappings and lists a configuration may have (a selector needs 4).
MAX_NESTING = 32
#: The longest error message: a refused value is quoted in it, and a value may be large.
MAX_MESSAGE_CHARS = 1000

# ECK settings that Stackflow does not implement: named as such instead of "unknown key".
_ECK_ONLY_KEYS = frozenset(
    {
        "webhook-cert-dir",
        "distribution-channel",
        "restrict-watched-resources",
        "ca-cert-validity",
        "ca-cert-rotate-before",
        "cert-validity",
        "cert-rotate-before",
        "container-registry",
        "container-repository",
        "container-suffix",
        "ubi-only",
        "set-default-security-context",
        "validate-storage-class",
        "exposed-node-labels",
        "password-length",
        "kube-client-timeout",
        "kube-client-qps",
        "elasticsearch-client-timeout",
        "elasticsearch-observation-interval",
        "metrics-host",
        "metrics-secure",
        "metrics-cert-dir",
        "probes-bind-address",
        "enable-tracing",
        "disable-config-watch",
    }
)

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1e-3,
    "us": 1.0,
    "µs": 1.0,
    "ms": 1e3,
    "s": 1e6,
    "m": 60e6,
    "h": 3600e6,
}


class ElasticsearchDial(StrEnum):
    """How the operator reaches a cluster's HTTP API (``elasticsearch-dial``)."""

    #: At the internal HTTP Service's DNS name, ``<es>-es-internal-http.<ns>.svc``, as ECK does.
    SERVICE = "service"
    #: At a ready address of that Service, computed from it and the Pods it selects, with the
    #: certificate still checked for the Service's name: for an operator outside the cluster
    #: that can reach the Pods' addresses but not resolve the cluster's names.
    ENDPOINTS = "endpoints"


class ConfigError(Exception):
    """An invalid operator configuration; the message is one line naming the key and problem."""

    def __init__(self, message: str) -> None:
        """Keep the message on one line, and short, whatever produced it."""
        super().__init__(_shortened(" ".join(message.splitlines())))


def _shortened(line: str) -> str:
    if len(line) <= MAX_MESSAGE_CHARS:
        return line
    cut = len(line) - MAX_MESSAGE_CHARS
    return f"{line[:MAX_MESSAGE_CHARS]}... ({cut} more characters)"


class UnusableSettingError(Exception):
    """A setting the operator cannot start with although it parsed (a port already taken, a
    kubeconfig that cannot be loaded); the message is one line naming the setting, which
    ``stackflow run`` prints before exiting with status 2."""

    def __init__(self, setting: str, problem: str) -> None:
        """Name the setting and the problem on one line."""
        super().__init__(" ".join(f"{setting}: {problem}".splitlines()))
        self.setting = setting


def port_in_use_error(setting: str, host: str, port: int) -> UnusableSettingError:
    """The error for a port that is already taken."""
    return UnusableSettingError(
        setting, f"port {port} on {host} is already in use (set {setting} to a free port)"
    )


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration (``1h``, ``90s``, ``1h30m``, ``1.5h``, ``500ms``); ValueError if not."""
    stripped = text.strip()
    if stripped == "0":
        return timedelta(0)
    position = 0
    microseconds = 0.0
    for match in _DURATION_PART.finditer(stripped):
        if match.start() != position:
            break
        microseconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position == 0 or position != len(stripped):
        raise ValueError(f"must be a duration such as 1h, 30m or 90s, got {quote(text)}")
    return timedelta(microseconds=microseconds)


def format_duration(duration: timedelta) -> str:
    """Render `duration` in the compact Go form `parse_duration` reads (``1h30m``, ``45s``)."""
    microseconds = round(duration.total_seconds() * 1e6)
    if microseconds == 0:
        return "0s"
    hours, rest = divmod(microseconds, 3600 * 10**6)
    minutes, rest = divmod(rest, 60 * 10**6)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
    if rest:
        seconds = f"{rest / 1e6:.6f}".rstrip("0").rstrip(".")
        text += f"{seconds}s" if rest >= 10**6 or text else f"{rest / 1e3:g}ms"
    return text


def _check_pem_file(path: Path | None) -> Path | None:
    if path is None:
        return None
    if not path.exists():
        raise ValueError(f"file {quote(str(path))} does not exist")
    if not path.is_file():
        raise ValueError(f"{quote(str(path))} is not a file")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"cannot read {quote(str(path))}: {exc.strerror}") from None
    if "-----BEGIN " not in text:
        raise ValueError(f"{quote(str(path))} is not a PEM file (no -----BEGIN line)")
    return path


def _selector_input(value: object) -> object:
    """Accept a selector as a mapping, as YAML/JSON text, or in the string form ``a=b,c``."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return {}
    try:
        decoded = load_bounded_yaml(value, max_nesting=MAX_NESTING)
    except DocumentYAMLError as exc:
        raise ValueError(exc.describe()) from None
    except yaml.YAMLError:
        decoded = None  # e.g. "!a", a YAML tag to the YAML parser, a selector to us
    if isinstance(decoded, dict):
        return decoded
    try:
        return selector_data_from_string(value)
    except SelectorError as exc:
        raise ValueError(f"invalid selector {quote(value)}: {exc}") from None


class OperatorConfig(BaseModel):
    """Every operator setting, with ECK's defaults; attribute names are the keys in snake_case."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        alias_generator=lambda name: name.replace("_", "-"),
    )

    operator_namespace: str = "elastic-system"
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    enable_webhook: bool = False
    webhook_port: int = 9443
    manage_webhook_certs: bool = True
    #: The ValidatingWebhookConfiguration the operator keeps (``manage-webhook-certs``).
    webhook_name: str = "elastic-webhook.k8s.elastic.co"
    #: The Secret (operator namespace) holding the webhook's CA and serving certificate; the
    #: Service in front of the webhook is named after it, without ``-cert``.
    webhook_secret: str = "elastic-webhook-server-cert"
    metrics_port: int = 0
    enable_leader_election: bool = True
    disable_telemetry: bool = False
    telemetry_interval: timedelta = timedelta(hours=1)
    log_verbosity: int = Field(default=0)
    #: ECK's ``enforce-rbac-on-refs``: a reference to an object of another namespace (an
    #: association, an AutoOps policy's cluster, a remote cluster) is honoured only when the
    #: referring object's ServiceAccount may ``get`` that object (a SubjectAccessReview).
    enforce_rbac_on_refs: bool = False
    #: ECK's ``max-concurrent-reconciles``, the bound on the work in flight: here the reconcile
    #: steps and other activities the one Temporal worker runs at once, each bound on its own
    #: (activities and local activities), across every controller (ECK: per controller,
    #: default 3). The rest wait (activities in their task queue), holding nothing. 16 by default:
    #: the worker's 100 let a burst of new clusters hold a hundred reconciles' reads and builds
    #: in memory at once, which the process keeps as RSS after the burst, for no speed on two
    #: cores (docs/performance.md).
    max_concurrent_reconciles: int = 16
    temporal_address: str = "localhost:7233"
    temporal_namespace: str = "default"
    temporal_task_queue: str = "stackflow"
    temporal_tls_cert: Path | None = None
    temporal_tls_key: Path | None = None
    temporal_tls_ca: Path | None = None
    temporal_api_key: SecretStr | None = None
    #: Workflows the worker keeps in memory (the sticky cache). A workflow outside it is replayed
    #: from its history on every signal, which costs several times a cached reconcile. Unset
    #: (the default), it is sized automatically from the memory budget: the cgroup memory limit
    #: when there is one, else 224 MiB (``stackflow.cli.sizing``; about 128 KB RSS per
    #: cached ResourceWorkflow unsandboxed, 224 KB sandboxed). Set it to fix the size; 0 turns
    #: the cache off.
    temporal_max_cached_workflows: int | None = None
    #: Run workflow code in the Temporal sandbox. Off by default: the sandbox re-enters its
    #: restricted importer for every payload (about half the operator's CPU per reconcile in
    #: bench/engine_bench.py), while the workflows import only pure modules and the tests and
    #: the replay tier run them sandboxed, which is where its non-determinism guard pays off.
    temporal_workflow_sandbox: bool = False
    #: A file holding a 32-byte key, base64-encoded: every Temporal payload is then encrypted
    #: with AES-256-GCM (``stackflow.codec``), so the Temporal server stores no readable data.
    #: Several keys, one a line: the first encrypts, all decrypt (key rotation).
    temporal_payload_encryption_key: Path | None = None
    #: Let payloads that are not encrypted through while ``temporal-payload-encryption-key`` is
    #: set (off: refused, naming this key): for the histories written before the key was set.
    temporal_payload_encryption_allow_plaintext: bool = False
    license_public_key: Path | None = None
    #: Dial the clusters' in-cluster Service addresses (``<es>-es-internal-http.<ns>.svc``).
    #: Unset (the default): on when the operator runs in a Pod, off outside a cluster, where
    #: those names do not resolve; off, each cluster's API is reported not reachable and its
    #: health is derived from its Pods, and no name is looked up.
    in_cluster_networking: bool | None = None
    #: Reach every cluster's HTTP API at this one URL instead of its Service: for an operator run
    #: outside the cluster against one Elasticsearch through ``kubectl port-forward``. An
    #: ``http://`` URL is dialled without TLS, an ``https://`` one trusting the cluster's CA.
    #: Set, it wins over ``in-cluster-networking``.
    elasticsearch_url: AnyHttpUrl | None = None
    #: ``service`` (the default): dial each cluster at its internal HTTP Service's name, which
    #: resolves only inside the cluster. ``endpoints``: dial a ready Pod address of that Service,
    #: computed from the Service and its Pods as the EndpointSlice controller would (the API
    #: server refuses the loopback Pod addresses of locally run nodes in EndpointSlices),
    #: trusting only the cluster's CA and checking that the certificate names the Service; the
    #: addresses are tried in a stable order, the next on a connection failure. With
    #: ``endpoints`` the operator dials wherever it runs (``in-cluster-networking`` may not be
    #: false). ``elasticsearch-url``, when set, wins over both.
    elasticsearch_dial: ElasticsearchDial = ElasticsearchDial.SERVICE

    @field_validator(
        "temporal_tls_cert",
        "temporal_tls_key",
        "temporal_tls_ca",
        "temporal_api_key",
        "temporal_payload_encryption_key",
        "license_public_key",
        "in_cluster_networking",
        "elasticsearch_url",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator(
        "temporal_tls_cert", "temporal_tls_key", "temporal_tls_ca", "license_public_key"
    )
    @classmethod
    def _pem_file(cls, value: Path | None) -> Path | None:
        return _check_pem_file(value)

    @field_validator("temporal_payload_encryption_key")
    @classmethod
    def _payload_key_file(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        try:
            read_key_file(value)
        except PayloadKeyError as error:
            raise ValueError(f"file {quote(str(value))}: {error}") from None
        return value

    @field_validator("namespaces", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if value is None:
            return ()
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("operator_namespace")
    @classmethod
    def _valid_operator_namespace(cls, value: str) -> str:
        return _namespace_name(value)

    @field_validator("namespaces")
    @classmethod
    def _valid_namespaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, name in enumerate(value):
            try:
                _namespace_name(name)
            except ValueError as exc:
                raise ValueError(f"entry {index}: {exc}") from None
        return value

    @field_validator("namespace_selector", mode="before")
    @classmethod
    def _selector_forms(cls, value: object) -> object:
        return _selector_input(value)

    @field_validator("webhook_name", "webhook_secret")
    @classmethod
    def _webhook_object_name(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", value):
            raise ValueError(f"must be a Kubernetes object name, got {quote(value)}")
        return value

    @field_validator(
        "webhook_port",
        "metrics_port",
        "log_verbosity",
        "temporal_max_cached_workflows",
        "max_concurrent_reconciles",
        mode="before",
    )
    @classmethod
    def _integer_of_its_own_type(cls, value: object) -> object:
        # pydantic's lax mode reads true as 1 and 9443.0 as 9443: a typo, not a port.
        if isinstance(value, bool | float):
            raise ValueError(f"must be an integer, got {json.dumps(value)}")
        return value

    @field_validator(
        "enable_webhook",
        "manage_webhook_certs",
        "enable_leader_election",
        "disable_telemetry",
        "enforce_rbac_on_refs",
        "temporal_workflow_sandbox",
        "in_cluster_networking",
        mode="before",
    )
    @classmethod
    def _boolean_of_its_own_type(cls, value: object) -> object:
        # A number is not a boolean in YAML (strings stay: the environment's "true"/"false").
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise ValueError(f"must be a boolean (true or false), got {json.dumps(value)}")
        return value

    @field_validator("webhook_port")
    @classmethod
    def _valid_webhook_port(cls, value: int) -> int:
        if not 1 <= value <= 65535:
            raise ValueError(f"must be a port between 1 and 65535, got {value}")
        return value

    @field_validator("metrics_port")
    @classmethod
    def _valid_metrics_port(cls, value: int) -> int:
        if not 0 <= value <= 65535:
            raise ValueError(
                f"must be a port between 1 and 65535 (0 disables metrics), got {value}"
            )
        return value

    @field_validator("telemetry_interval", mode="before")
    @classmethod
    def _go_duration(cls, value: object) -> object:
        if isinstance(value, timedelta):
            return value
        if not isinstance(value, str):
            raise ValueError(f"must be a duration such as 1h, 30m or 90s, got {value!r}")
        duration = parse_duration(value)
        if duration <= timedelta(0):
            raise ValueError(f"must be a positive duration, got {quote(value)}")
        return duration

    @field_validator("elasticsearch_dial", mode="before")
    @classmethod
    def _dial_mode(cls, value: object) -> object:
        if value == "":
            return ElasticsearchDial.SERVICE
        modes = [mode.value for mode in ElasticsearchDial]
        if value not in modes:
            shown = quote(value) if isinstance(value, str) else repr(value)
            raise ValueError(f"must be {' or '.join(modes)}, got {shown}")
        return value

    @field_validator("temporal_max_cached_workflows", mode="before")
    @classmethod
    def _empty_is_automatic(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("temporal_max_cached_workflows")
    @classmethod
    def _valid_cache_size(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError(f"must be 0 (no cache) or more, got {value}")
        return value

    @field_validator("max_concurrent_reconciles")
    @classmethod
    def _at_least_one_reconcile(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"must be 1 or more, got {value}")
        return value

    @field_validator("log_verbosity")
    @classmethod
    def _valid_verbosity(cls, value: int) -> int:
        if value < -2:
            raise ValueError(f"must be -2 (errors only) or more, got {value}")
        return value

    @field_validator("temporal_address")
    @classmethod
    def _host_and_port(cls, value: str) -> str:
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"must be host:port (e.g. localhost:7233), got {quote(value)}")
        return value

    @field_validator("temporal_namespace", "temporal_task_queue")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> OperatorConfig:
        selector = self.namespace_selector
        if selector is not None and not selector.is_empty() and self.namespaces:
            raise ValueError(MUTUALLY_EXCLUSIVE_MESSAGE)
        if (self.temporal_tls_cert is None) != (self.temporal_tls_key is None):
            raise ValueError(
                '"temporal-tls-cert" and "temporal-tls-key" must be set together (mutual TLS)'
            )
        if self.elasticsearch_dial is ElasticsearchDial.ENDPOINTS and (
            self.in_cluster_networking is False
        ):
            # One of the two would be silently ignored: endpoints dials the Pods, false nothing.
            raise ValueError(
                '"elasticsearch-dial: endpoints" dials the clusters\' Pods and '
                '"in-cluster-networking: false" dials no cluster: unset one of them'
            )
        return self

    def scope(self) -> ScopeConfig:
        """The namespace scope (an empty selector turns dynamic mode off)."""
        selector = self.namespace_selector
        return ScopeConfig(
            operator_namespace=self.operator_namespace,
            namespace_selector=None if selector is None or selector.is_empty() else selector,
            namespaces=self.namespaces or None,
        )

    @property
    def dynamic_namespaces_enabled(self) -> bool:
        """Whether a non-empty ``namespace-selector`` turns dynamic namespace scoping on."""
        return self.scope().mode is ScopeMode.DYNAMIC


def _namespace_name(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"must be a namespace name (lowercase alphanumerics and '-', at most 63 characters, "
            f"starting and ending with an alphanumeric), got {quote(value)}"
        )
    return value


def config_keys() -> list[str]:
    """Every configuration key, kebab-case, in declaration order."""
    return [field.alias or name for name, field in OperatorConfig.model_fields.items()]


def env_var_name(key: str) -> str:
    """The environment variable that overrides `key` (``webhook-port`` → STACKFLOW_WEBHOOK_PORT)."""
    return ENV_PREFIX + key.upper().replace("-", "_")


def empty_selector_log_line(config: OperatorConfig) -> str | None:
    """The start-up log line for ``namespace-selector: {}`` (dynamic mode off), else None."""
    selector = config.namespace_selector
    if selector is None or not selector.is_empty():
        return None
    managed = "the configured namespaces" if config.namespaces else "all namespaces"
    return (
        f"namespace-selector is empty: dynamic namespace selection is disabled, managing {managed}"
    )


def _unknown_key_message(key: object) -> str:
    if not isinstance(key, str):
        return f"{key!r}: configuration keys must be strings"
    if key in _ECK_ONLY_KEYS:
        return f"{key}: an ECK setting that Stackflow does not support"
    message = f"{key}: unknown configuration key"
    close = difflib.get_close_matches(key, config_keys(), n=1)
    return f"{message} (did you mean {quote(close[0])}?)" if close else message


def read_bounded(path: Path) -> bytes:
    """The file's bytes, at most ``MAX_CONFIG_BYTES + 1`` of them (more says it is too large)."""
    with path.open("rb") as file:
        return file.read(MAX_CONFIG_BYTES + 1)


def _read_file(path: Path) -> dict[str, Any]:
    shown = quote(str(path))
    try:
        raw = read_bounded(path)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {shown}: larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MiB, "
                "the most a configuration file may be"
            )
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {shown}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {shown}: is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {shown}: cannot be read: {exc}") from None
    try:
        data = load_bounded_yaml(text, max_nesting=MAX_NESTING)
    except DocumentYAMLError as exc:
        raise ConfigError(f"config file {shown}: {exc.describe()}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"config file {shown}: invalid YAML{where}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {shown}: invalid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise ConfigError(
            f"config file {shown}: must be a mapping of configuration keys, got {kind}"
        )
    return data


def load_config(path: Path | None, environ: Mapping[str, str]) -> OperatorConfig:
    """Read the config file at `path` (None: defaults only), apply environment overrides.

    Raises ConfigError with a one-line message on any problem. Environment variables with the
    ``STACKFLOW_`` prefix that name no key are left alone (other tools share the prefix).
    """
    data: dict[Any, Any] = _read_file(path) if path is not None else {}
    for key in data:
        if key not in config_keys():
            raise ConfigError(_unknown_key_message(key))
    from_env: dict[str, str] = {}
    for key in config_keys():
        variable = env_var_name(key)
        if variable in environ:
            data[key] = environ[variable]
            from_env[key] = variable
    try:
        return OperatorConfig.model_validate(data)
    except ValidationError as exc:
        line = describe_validation_error(exc)
        errors = exc.errors()
        root = errors[0]["loc"][0] if errors[0]["loc"] else None
        if isinstance(root, str) and root in from_env:
            line = f"{line} (from {from_env[root]})"
        raise ConfigError(line) from None


def describe_effective(config: OperatorConfig) -> str:
    """YAML of the effective configuration (secrets redacted), headed by the scope mode."""
    values: dict[str, Any] = config.model_dump(mode="json", by_alias=True)
    values["telemetry-interval"] = format_duration(config.telemetry_interval)
    if config.temporal_api_key is not None:
        values["temporal-api-key"] = REDACTED
    scope = config.scope()
    header = f"# scope: {scope.mode.value}"
    if scope.namespace_selector is not None:
        header += f" (selector {quote(scope.namespace_selector.to_string())})"
    body = yaml.safe_dump(values, sort_keys=False, default_flow_style=False, allow_unicode=True)
    return f"{header}\n{body}"
