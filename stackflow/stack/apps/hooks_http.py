"""Kind hooks of the HTTP-serving applications: Kibana, APM Server, Enterprise Search, Maps, Package Registry.

Each hook returns the operator's settings for the kind (TLS, association targets, generated keys)
and whatever else the kind's pods need. Generated keys are read back from the current config Secret
so that a rebuild returns the same bytes and does not roll the pods.
"""

from __future__ import annotations

from typing import Any

from stackflow.stack.apps.associations import (
    credentials,
    es_output_settings,
    kibana_endpoint_settings,
    prefixed,
)
from stackflow.stack.apps.context import HTTP_CERTS_DIR, AppContext, AppParts
from stackflow.stack.apps.settings import Settings, secret_file_settings
from stackflow.stack.objects import decode_secret_data, encode_secret_data

TELEMETRY_FILE = "telemetry.yml"
APM_TOKEN_KEY = "secret-token"
KIBANA_ENCRYPTION_KEYS = (
    "xpack.security.encryptionKey",
    "xpack.reporting.encryptionKey",
    "xpack.encryptedSavedObjects.encryptionKey",
)


def current_settings(context: AppContext) -> Settings:
    """Return the settings of the current config Secret (to keep generated values)."""
    secret = context.existing.get(("Secret", context.child_name(*context.kind.config_secret_parts)))
    return secret_file_settings(secret, context.render(context.kind.config_file))


def kept_or_new(context: AppContext, *, current: Settings, key: str) -> Any:
    """Return the current value of a generated setting, or a new random one."""
    value = current.get(key)
    return value if value not in (None, "") else context.random_secret()


def _tls_settings(context: AppContext, prefix: str) -> Settings:
    if not context.http_tls_enabled:
        return {}
    return {
        f"{prefix}.enabled": True,
        f"{prefix}.certificate": f"{HTTP_CERTS_DIR}/tls.crt",
        f"{prefix}.key": f"{HTTP_CERTS_DIR}/tls.key",
    }


def kibana_parts(context: AppContext) -> AppParts:
    """Kibana: server settings, encryption keys, ES / Enterprise Search / Package Registry targets."""
    current = current_settings(context)
    config: Settings = {"server.name": context.name, "server.host": "0.0.0.0"}
    config.update(_tls_settings(context, "server.ssl"))
    config.update(
        {key: kept_or_new(context, current=current, key=key) for key in KIBANA_ENCRYPTION_KEYS}
    )
    parts = AppParts(config=config)
    es = context.association("es")
    if es is not None:
        creds = credentials(es, env_prefix="ELASTICSEARCH")
        config["elasticsearch.hosts"] = [es.url]
        if creds.service_token:
            config["elasticsearch.serviceAccountToken"] = creds.service_token
        elif creds.username:
            config["elasticsearch.username"] = creds.username
            config["elasticsearch.password"] = creds.password
        if es.has_ca:
            config["elasticsearch.ssl.certificateAuthorities"] = [es.ca_path]
            config["elasticsearch.ssl.verificationMode"] = "certificate"
        parts.env += creds.env
    ent = context.association("ent")
    if ent is not None:
        config["enterpriseSearch.host"] = ent.url
        if ent.has_ca:
            config["enterpriseSearch.ssl.certificateAuthorities"] = [ent.ca_path]
    epr = context.association("epr")
    if epr is not None:
        config["xpack.fleet.registryUrl"] = epr.url
    # The telemetry reporter writes this key into the same Secret; keep it.
    config_secret = context.child_name(*context.kind.config_secret_parts)
    telemetry = context.existing_secret_data(config_secret).get(TELEMETRY_FILE)
    if telemetry is not None:
        parts.extra_config_data[TELEMETRY_FILE] = telemetry
    return parts


def apm_parts(context: AppContext) -> AppParts:
    """APM Server: listen address, secret token (Secret ``<apm>-apm-token``), ES and Kibana targets."""
    token_name = context.child_name("token")
    token = decode_secret_data(context.existing.get(("Secret", token_name))).get(APM_TOKEN_KEY)
    token_secret = context.secret(
        token_name,
        encode_secret_data({APM_TOKEN_KEY: token or context.random_secret().encode()}),
        soft_owned=True,
    )
    config: Settings = {
        "apm-server.host": f":{context.kind.http_port}",
        "apm-server.secret_token": "${SECRET_TOKEN}",
    }
    config.update(_tls_settings(context, "apm-server.ssl"))
    env: list[dict[str, Any]] = [
        {
            "name": "SECRET_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": token_name, "key": APM_TOKEN_KEY}},
        }
    ]
    es = context.association("es")
    if es is not None:
        creds = credentials(es, env_prefix="ELASTICSEARCH")
        config.update(prefixed("output.elasticsearch", es_output_settings(es, creds)))
        env += creds.env
    kb = context.association("kb")
    if kb is not None:
        creds = credentials(kb, env_prefix="KIBANA")
        config["apm-server.kibana.enabled"] = True
        config.update(prefixed("apm-server.kibana", kibana_endpoint_settings(kb, creds)))
        env += creds.env
    return AppParts(
        config=config,
        env=env,
        args=["apm-server", "run", "-e", "-c", context.kind.config_path],
        secrets=[token_secret],
    )


def enterprise_search_parts(context: AppContext) -> AppParts:
    """Enterprise Search: listen address, session and encryption keys, the ES target."""
    current = current_settings(context)
    port = context.kind.http_port
    encryption_keys = current.get("secret_management.encryption_keys")
    config: Settings = {
        "ent_search.listen_host": "0.0.0.0",
        "ent_search.external_url": f"{context.http_scheme}://localhost:{port}",
        "allow_es_settings_modification": True,
        "secret_session_key": kept_or_new(context, current=current, key="secret_session_key"),
        "secret_management.encryption_keys": encryption_keys or [context.random_secret()],
    }
    config.update(_tls_settings(context, "ent_search.ssl"))
    parts = AppParts(config=config)
    es = context.association("es")
    if es is not None:
        creds = credentials(es, env_prefix="ELASTICSEARCH")
        config["elasticsearch.host"] = es.url
        if creds.username:
            config["elasticsearch.username"] = creds.username
            config["elasticsearch.password"] = creds.password
        if es.has_ca:
            config["elasticsearch.ssl.enabled"] = True
            config["elasticsearch.ssl.certificate_authority"] = es.ca_path
        parts.env += creds.env
    return parts


def maps_parts(context: AppContext) -> AppParts:
    """Elastic Maps Server: listen address, TLS and the ES target."""
    config: Settings = {"host": "0.0.0.0"}
    config.update(_tls_settings(context, "ssl"))
    parts = AppParts(config=config)
    es = context.association("es")
    if es is not None:
        creds = credentials(es, env_prefix="ELASTICSEARCH")
        config["elasticsearch.host"] = es.url
        if creds.username:
            config["elasticsearch.username"] = creds.username
            config["elasticsearch.password"] = creds.password
        if es.has_ca:
            config["elasticsearch.ssl.certificateAuthorities"] = [es.ca_path]
            config["elasticsearch.ssl.verificationMode"] = "certificate"
        parts.env += creds.env
    return parts


def package_registry_parts(context: AppContext) -> AppParts:
    """Package Registry: package paths and cache times; address and TLS through its env flags."""
    config: Settings = {
        "package_paths": ["/packages/package-registry", "/packages/package-storage"],
        "cache_time.index": "10s",
        "cache_time.search": "10m",
        "cache_time.categories": "10m",
        "cache_time.catch_all": "10m",
    }
    env: list[dict[str, Any]] = [
        {"name": "EPR_ADDRESS", "value": f"0.0.0.0:{context.kind.http_port}"},
        {"name": "EPR_CONFIG", "value": context.kind.config_path},
    ]
    if context.http_tls_enabled:
        env += [
            {"name": "EPR_TLS_CERT", "value": f"{HTTP_CERTS_DIR}/tls.crt"},
            {"name": "EPR_TLS_KEY", "value": f"{HTTP_CERTS_DIR}/tls.key"},
        ]
    return AppParts(config=config, env=env)
