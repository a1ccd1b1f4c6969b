"""The application side of associations: the confs the association controllers write as annotations.

An association controller (Kibana → Elasticsearch, Agent → Fleet Server…) writes a JSON
``AssociationConf`` into an annotation ``association.k8s.elastic.co/<target>-conf[-<hash>]`` of the
application. The application builders only read it: the URL to reach the target, the Secret holding the
credentials and the Secret holding the target's CA. Credentials never enter a rendered config file:
they reach the container as environment variables taken from the Secret, and the config refers to them
as ``${VAR}``, so a config Secret never holds a password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stackflow.models.documents import load_bounded_json
from stackflow.models.objects import view
from stackflow.stack.naming import hash_object, object_selector

ANNOTATION_PREFIX = "association.k8s.elastic.co/"
NO_AUTH_SECRET = "-"
"""``authSecretName`` of associations that need no credentials (KB→ENT, KB→EPR, Agent→Fleet Server)."""
EXTERNAL_PASSWORD_KEY = "password"
CA_FILE = "ca.crt"


@dataclass(frozen=True)
class AssociationConf:
    """One parsed association conf and the annotation it came from."""

    annotation: str
    url: str
    auth_secret_name: str = ""
    auth_secret_key: str = ""
    is_api_key: bool = False
    is_service_account: bool = False
    ca_cert_provided: bool = False
    ca_secret_name: str = ""
    version: str = ""

    @property
    def slug(self) -> str:
        """The annotation's short form: ``es``, ``kb``, ``fs``, ``es-<hash>``, ``ent``, ``epr``."""
        suffix = self.annotation.removeprefix(ANNOTATION_PREFIX)
        target, _, rest = suffix.partition("-conf")
        return f"{target}{rest}"

    @property
    def target(self) -> str:
        """The target kind's short name (``es``, ``kb``, ``ent``, ``epr``, ``fs``)."""
        return self.slug.split("-", 1)[0]

    @property
    def has_auth(self) -> bool:
        """Whether the target needs credentials."""
        return bool(self.auth_secret_name) and self.auth_secret_name != NO_AUTH_SECRET

    @property
    def has_ca(self) -> bool:
        """Whether a CA certificate Secret is to be mounted."""
        return self.ca_cert_provided and bool(self.ca_secret_name)

    @property
    def ca_volume_name(self) -> str:
        """The pod volume holding the target's CA."""
        return f"elastic-internal-{self.slug}-ca"

    @property
    def ca_dir(self) -> str:
        """Where the target's CA Secret is mounted."""
        return f"/mnt/elastic-internal/{self.slug}-association/certs"

    @property
    def ca_path(self) -> str:
        """The path of the target's CA certificate file inside the container."""
        return f"{self.ca_dir}/{CA_FILE}"


def parse_conf(annotation: str, raw: Mapping[str, Any]) -> AssociationConf:
    """Return the conf ``raw`` (the annotation's JSON object) as an :class:`AssociationConf`."""
    return AssociationConf(
        annotation=annotation,
        url=str(raw.get("url", "")),
        auth_secret_name=str(raw.get("authSecretName", "")),
        auth_secret_key=str(raw.get("authSecretKey", "")),
        is_api_key=bool(raw.get("isApiKey", False)),
        is_service_account=bool(raw.get("isServiceAccount", False)),
        ca_cert_provided=bool(raw.get("caCertProvided", False)),
        ca_secret_name=str(raw.get("caSecretName", "")),
        version=str(raw.get("version", "")),
    )


def confs_from_annotations(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Return the association confs found in ``obj``'s annotations, keyed by annotation.

    Annotations that are not JSON objects are skipped: the association controller rewrites them.
    """
    annotations = view(obj).annotations
    confs: dict[str, dict[str, Any]] = {}
    for key, value in sorted(annotations.items()):
        if not key.startswith(ANNOTATION_PREFIX) or "-conf" not in key:
            continue
        try:
            parsed = load_bounded_json(value)
        except (TypeError, ValueError):
            continue
        if isinstance(parsed, dict):
            confs[key] = parsed
    return confs


def parse_confs(confs: Mapping[str, Mapping[str, Any]]) -> tuple[AssociationConf, ...]:
    """Return the confs of a ``{annotation: conf}`` mapping, ordered by annotation."""
    return tuple(parse_conf(key, confs[key]) for key in sorted(confs) if confs[key].get("url"))


def ref_annotation(
    *, target: str, ref: Mapping[str, Any], default_namespace: str, suffix: str = ""
) -> str:
    """Return the annotation of one of several refs: ``…/<target>-conf-<HashObject(selector)>``."""
    selector = object_selector(
        namespace=str(ref.get("namespace") or default_namespace) if ref.get("name") else "",
        name=str(ref.get("name") or ""),
        service_name=str(ref.get("serviceName") or ""),
        secret_name=str(ref.get("secretName") or ""),
    )
    return f"{ANNOTATION_PREFIX}{target}-conf-{hash_object(selector)}{suffix}"


def _secret_env(name: str, *, secret: str, key: str) -> dict[str, Any]:
    return {
        "name": name,
        "valueFrom": {"secretKeyRef": {"name": secret, "key": key, "optional": False}},
    }


@dataclass(frozen=True)
class Credentials:
    """How a container authenticates to a target: config values and the env vars behind them."""

    env: tuple[dict[str, Any], ...] = ()
    username: str | None = None
    password: str | None = None
    api_key: str | None = None
    service_token: str | None = None


def credentials(conf: AssociationConf, *, env_prefix: str) -> Credentials:
    """Return the env vars (secret references) and config values that carry ``conf``'s credentials.

    A managed user's Secret key is the username and its value the password; an external target's
    Secret holds ``username`` and ``password`` keys; service-account and API-key confs carry a token.
    """
    if not conf.has_auth:
        return Credentials()
    secret = conf.auth_secret_name
    if conf.is_service_account:
        name = f"{env_prefix}_SERVICE_TOKEN"
        return Credentials(
            env=(_secret_env(name, secret=secret, key=conf.auth_secret_key or "token"),),
            service_token=f"${{{name}}}",
        )
    if conf.is_api_key:
        name = f"{env_prefix}_API_KEY"
        return Credentials(
            env=(_secret_env(name, secret=secret, key=conf.auth_secret_key or "api-key"),),
            api_key=f"${{{name}}}",
        )
    password_env = f"{env_prefix}_PASSWORD"
    if conf.auth_secret_key == EXTERNAL_PASSWORD_KEY:
        username_env = f"{env_prefix}_USERNAME"
        return Credentials(
            env=(
                _secret_env(username_env, secret=secret, key="username"),
                _secret_env(password_env, secret=secret, key=EXTERNAL_PASSWORD_KEY),
            ),
            username=f"${{{username_env}}}",
            password=f"${{{password_env}}}",
        )
    return Credentials(
        env=(_secret_env(password_env, secret=secret, key=conf.auth_secret_key),),
        username=conf.auth_secret_key,
        password=f"${{{password_env}}}",
    )


def ca_volumes(
    confs: tuple[AssociationConf, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the (volumes, mounts) of every association CA Secret."""
    volumes = [
        {"name": conf.ca_volume_name, "secret": {"secretName": conf.ca_secret_name}}
        for conf in confs
        if conf.has_ca
    ]
    mounts = [
        {"name": conf.ca_volume_name, "mountPath": conf.ca_dir, "readOnly": True}
        for conf in confs
        if conf.has_ca
    ]
    return volumes, mounts


def referenced_secret_names(confs: tuple[AssociationConf, ...]) -> list[str]:
    """Return the Secrets a pod depends on through its associations (credentials and CAs)."""
    names = {conf.auth_secret_name for conf in confs if conf.has_auth}
    names |= {conf.ca_secret_name for conf in confs if conf.has_ca}
    return sorted(names)


def es_output_settings(conf: AssociationConf, creds: Credentials) -> dict[str, Any]:
    """Return a Beats-style Elasticsearch output: hosts, API key or user, CA (keys unprefixed)."""
    output: dict[str, Any] = {"hosts": [conf.url]}
    if creds.api_key:
        output["api_key"] = creds.api_key
    elif creds.username:
        output["username"] = creds.username
        output["password"] = creds.password
    if conf.has_ca:
        output["ssl.certificate_authorities"] = [conf.ca_path]
    return output


def kibana_endpoint_settings(conf: AssociationConf, creds: Credentials) -> dict[str, Any]:
    """Return a Beats-style Kibana endpoint: host, user, CA (keys unprefixed)."""
    settings: dict[str, Any] = {"host": conf.url}
    if creds.username:
        settings["username"] = creds.username
        settings["password"] = creds.password
    if conf.has_ca:
        settings["ssl.certificate_authorities"] = [conf.ca_path]
    return settings


def prefixed(prefix: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``settings`` with every key under ``prefix`` (``hosts`` → ``<prefix>.hosts``)."""
    return {f"{prefix}.{key}": value for key, value in settings.items()}
