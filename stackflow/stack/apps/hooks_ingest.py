"""Kind hooks of the data shippers: Beat, Elastic Agent (standalone and Fleet) and Logstash."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from stackflow.stack.apps.associations import (
    AssociationConf,
    credentials,
    es_output_settings,
    kibana_endpoint_settings,
    prefixed,
    ref_annotation,
)
from stackflow.stack.apps.context import HTTP_CERTS_DIR, AppContext, AppParts
from stackflow.stack.apps.settings import Settings
from stackflow.stack.objects import decode_secret_data, encode_secret_data
from stackflow.stack.pods import field_env

PIPELINES_FILE = "pipelines.yml"
LOGSTASH_CONFIG_DIR = "/usr/share/logstash/config"
DEFAULT_PIPELINES = [{"pipeline.id": "main", "path.config": "/usr/share/logstash/pipeline"}]
ENROLLMENT_TOKEN_KEY = "FLEET_ENROLLMENT_TOKEN"


def beat_parts(context: AppContext) -> AppParts:
    """Beat: the ES output and the Kibana setup endpoint from the associations."""
    config: Settings = {}
    env: list[dict[str, Any]] = [field_env("NODE_NAME", "spec.nodeName")]
    es = context.association("es")
    if es is not None:
        creds = credentials(es, env_prefix="ELASTICSEARCH")
        config.update(prefixed("output.elasticsearch", es_output_settings(es, creds)))
        env += creds.env
    kb = context.association("kb")
    if kb is not None:
        creds = credentials(kb, env_prefix="KIBANA")
        config.update(prefixed("setup.kibana", kibana_endpoint_settings(kb, creds)))
        env += creds.env
    return AppParts(config=config, env=env, args=["-e", "-c", context.kind.config_path])


def agent_es_refs(context: AppContext) -> list[tuple[Mapping[str, Any], AssociationConf]]:
    """Return each ``spec.elasticsearchRefs`` entry with its association conf (refs not yet associated are left out)."""
    by_annotation = {conf.annotation: conf for conf in context.associations}
    pairs = []
    for ref in context.spec.get("elasticsearchRefs") or []:
        annotation = ref_annotation(target="es", ref=ref, default_namespace=context.namespace)
        if annotation in by_annotation:
            pairs.append((ref, by_annotation[annotation]))
    return pairs


def _fleet_server_url(context: AppContext) -> str:
    service = context.child_name("http")
    return f"{context.http_scheme}://{service}.{context.namespace}.svc:{context.kind.http_port}"


def _fleet_env(context: AppContext) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Return the Fleet enrollment settings: plain values (envvars Secret) and secret references."""
    spec = context.spec
    values: dict[str, str] = {"FLEET_ENROLL": "true"}
    secret_env: list[dict[str, Any]] = []
    if spec.get("fleetServerEnabled"):
        values["FLEET_SERVER_ENABLE"] = "true"
        values["FLEET_URL"] = _fleet_server_url(context)
        if spec.get("policyID"):
            values["FLEET_SERVER_POLICY_ID"] = str(spec["policyID"])
        if context.http_tls_enabled:
            values["FLEET_SERVER_CERT"] = f"{HTTP_CERTS_DIR}/tls.crt"
            values["FLEET_SERVER_CERT_KEY"] = f"{HTTP_CERTS_DIR}/tls.key"
            values["FLEET_CA"] = f"{HTTP_CERTS_DIR}/ca.crt"
        refs = agent_es_refs(context)
        if refs:
            es = refs[0][1]
            creds = credentials(es, env_prefix="FLEET_SERVER")
            values["FLEET_SERVER_ELASTICSEARCH_HOST"] = es.url
            if es.has_ca:
                values["FLEET_SERVER_ELASTICSEARCH_CA"] = es.ca_path
            if creds.username:
                es_creds = credentials(es, env_prefix="FLEET_SERVER_ELASTICSEARCH")
                values["FLEET_SERVER_ELASTICSEARCH_USERNAME"] = str(es_creds.username)
                secret_env += es_creds.env
            else:
                secret_env += creds.env
    else:
        fleet_server = context.association("fs")
        if fleet_server is not None:
            values["FLEET_URL"] = fleet_server.url
            if fleet_server.has_ca:
                values["FLEET_CA"] = fleet_server.ca_path
    kb = context.association("kb")
    if kb is not None:
        creds = credentials(kb, env_prefix="KIBANA_FLEET")
        values["KIBANA_FLEET_HOST"] = kb.url
        if spec.get("fleetServerEnabled"):
            values["KIBANA_FLEET_SETUP"] = "true"
        if creds.username:
            values["KIBANA_FLEET_USERNAME"] = creds.username
        if kb.has_ca:
            values["KIBANA_FLEET_CA"] = kb.ca_path
        secret_env += creds.env
    return values, secret_env


def agent_parts(context: AppContext) -> AppParts:
    """Agent: standalone outputs in ``agent.yml``, or Fleet enrollment through ``<agent>-agent-envvars``."""
    if (context.spec.get("mode") or "standalone") != "fleet":
        outputs: dict[str, Any] = {}
        env: list[dict[str, Any]] = [field_env("NODE_NAME", "spec.nodeName")]
        for index, (ref, conf) in enumerate(agent_es_refs(context)):
            creds = credentials(conf, env_prefix=f"ELASTICSEARCH_{index}")
            outputs[str(ref.get("outputName") or "default")] = {
                "type": "elasticsearch",
                **es_output_settings(conf, creds),
            }
            env += creds.env
        config: Settings = {"outputs": outputs} if outputs else {}
        return AppParts(config=config, env=env, args=["-e", "-c", context.kind.config_path])
    envvars_name = context.child_name("envvars")
    values, secret_env = _fleet_env(context)
    # The enrollment token comes from Kibana's Fleet API (an I/O step of the controller); keep it.
    current = decode_secret_data(context.existing.get(("Secret", envvars_name)))
    if ENROLLMENT_TOKEN_KEY in current:
        values[ENROLLMENT_TOKEN_KEY] = current[ENROLLMENT_TOKEN_KEY].decode()
    envvars = context.secret(envvars_name, encode_secret_data(values))
    return AppParts(
        env=[field_env("NODE_NAME", "spec.nodeName"), *secret_env],
        env_from=[{"secretRef": {"name": envvars_name}}],
        secrets=[envvars],
    )


def env_var_prefix(cluster_name: str) -> str:
    """Return the env var prefix Logstash pipelines use for an ES cluster (``prod-eu`` → ``PROD_EU``)."""
    return re.sub(r"[^A-Za-z0-9]", "_", cluster_name).upper()


def _logstash_pipelines(context: AppContext) -> bytes:
    pipelines = context.spec.get("pipelines")
    if pipelines:
        return yaml.safe_dump(list(pipelines), sort_keys=True).encode()
    reference = (context.spec.get("pipelinesRef") or {}).get("secretName")
    if reference:
        data = context.existing_secret_data(str(reference)).get(PIPELINES_FILE)
        if data is not None:
            return data
    return yaml.safe_dump(DEFAULT_PIPELINES, sort_keys=True).encode()


def logstash_parts(context: AppContext) -> AppParts:
    """Logstash: the API listen address, ``pipelines.yml`` and per-cluster ES env vars."""
    pipeline_name = context.child_name("pipeline")
    pipeline_secret = context.secret(
        pipeline_name, encode_secret_data({PIPELINES_FILE: _logstash_pipelines(context)})
    )
    env: list[dict[str, Any]] = []
    by_annotation = {conf.annotation: conf for conf in context.associations}
    for ref in context.spec.get("elasticsearchRefs") or []:
        annotation = ref_annotation(target="es", ref=ref, default_namespace=context.namespace)
        conf = by_annotation.get(annotation)
        if conf is None or not ref.get("clusterName"):
            continue
        prefix = f"{env_var_prefix(str(ref['clusterName']))}_ES"
        creds = credentials(conf, env_prefix=prefix)
        env.append({"name": f"{prefix}_HOSTS", "value": conf.url})
        if creds.username:
            user = next((e for e in creds.env if e["name"] == f"{prefix}_USERNAME"), None)
            env.append(
                {**user, "name": f"{prefix}_USER"}
                if user
                else {"name": f"{prefix}_USER", "value": creds.username}
            )
        env += [e for e in creds.env if e["name"] != f"{prefix}_USERNAME"]
        if conf.has_ca:
            env.append({"name": f"{prefix}_SSL_CERTIFICATE_AUTHORITY", "value": conf.ca_path})
    return AppParts(
        config={"api.http.host": "0.0.0.0"},
        env=env,
        volumes=[
            {"name": "elastic-internal-logstash-pipeline", "secret": {"secretName": pipeline_name}}
        ],
        mounts=[
            {
                "name": "elastic-internal-logstash-pipeline",
                "mountPath": f"{LOGSTASH_CONFIG_DIR}/{PIPELINES_FILE}",
                "subPath": PIPELINES_FILE,
                "readOnly": True,
            }
        ],
        secrets=[pipeline_secret],
    )
