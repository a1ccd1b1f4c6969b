"""Fuzzing the Secrets a cluster's build reads: the ones its spec references and its own.

A user writes the Secrets ``spec.auth.roles``, ``spec.auth.fileRealm``,
``spec.transport.tls.certificate`` and ``spec.http.tls.certificate`` name, and may edit the
operator's own (the file realm, the elastic user, the internal CAs). Their content reaches the
build as it is: YAML, users files, PEM certificates and keys (encrypted, of another key type, not
PEM at all). The build must still end as manifests or as a ``ValueError`` whose message the
reconcile reports as ``InvalidSpec``; any other exception is a crash retried for ever.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stackflow.stack import certificates
from stackflow.stack.apps.builder import desired_children as application_children
from stackflow.stack.apps.validation import validate_application
from stackflow.stack.elasticsearch import users
from stackflow.stack.elasticsearch.builder import desired_children
from stackflow.stack.elasticsearch.validation import validate_elasticsearch
from tests.unit.fuzz.strategies import BUILD_SETTINGS, HOSTILE_STRINGS

NOW = datetime(2026, 3, 1, tzinfo=UTC)
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
SecretData = dict[str, bytes]
Existing = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module", autouse=True)
def one_key_for_every_certificate() -> Iterator[None]:
    """Certificates are signed with one key, made and loaded once (RSA is not what is fuzzed)."""
    load_key = functools.lru_cache(maxsize=8)(serialization.load_pem_private_key)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(certificates, "_new_key", lambda: RSA_KEY)
        patch.setattr(serialization, "load_pem_private_key", load_key)
        yield


def certificate_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, *, ca: bool) -> bytes:
    """A self-signed certificate for ``key``: a CA or a leaf."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "user-issued")])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - timedelta(days=1))
        .not_valid_after(NOW + timedelta(days=300))
    )
    if ca:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        )
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def key_pem(
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey, *, password: bytes | None = None
) -> bytes:
    """``key`` as PKCS#8 PEM, encrypted with ``password`` when there is one."""
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password)
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


PEMS = st.sampled_from(
    [
        certificate_pem(RSA_KEY, ca=True),
        certificate_pem(RSA_KEY, ca=False),
        certificate_pem(EC_KEY, ca=True),
        key_pem(RSA_KEY),
        key_pem(RSA_KEY, password=b"secret"),
        key_pem(EC_KEY),
        b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
        b"",
    ]
)
BLOBS = st.one_of(PEMS, st.binary(max_size=40), HOSTILE_STRINGS.map(str.encode))
YAML_TEXTS = st.one_of(
    st.sampled_from(
        [
            "role: {cluster: [all]}\n",
            "a: [b\n",
            "a:\n\t- b\n",
            "a: !!python/object:os.system x\n",
            "- just\n- a list\n",
            "a: &a [x, x]\nb: [*a, *a]\n",
            "a: " + "[" * 600 + "]" * 600,
            "a: 1\na: 2\n",
            "? [complex, key]\n: value\n",
        ]
    ),
    HOSTILE_STRINGS,
)
USERS_FILES = st.one_of(
    st.sampled_from(
        [
            "alice:{PBKDF2}10000$c2FsdA==$eA==\n",
            "alice:$2a$10$abcdefghijklmnopqrstuv\n",
            "a:b:c\n:\nno-colon\n",
            "elastic-internal:{PBKDF2}0$c2FsdA==$eA==\n",
            "elastic-internal:{PBKDF2}-5$c2FsdA==$eA==\n",
            "elastic-internal:{PBKDF2}x$!!$eA==\n",
            "elastic-internal:{PBKDF2}10000$c2FsdA==\n",
        ]
    ),
    HOSTILE_STRINGS,
)
USERS_ROLES_FILES = st.one_of(
    st.sampled_from(["superuser:alice\n", "r:\n:x\nno-colon\n", "r:a,,b\n"]), HOSTILE_STRINGS
)


def secret(name: str, data: Mapping[str, bytes]) -> Existing:
    """An existing Secret ``name`` holding ``data`` (base64-encoded as the API server has it)."""
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    return {
        ("Secret", name): {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": "ns1"},
            "data": encoded,
        }
    }


def text_data(**texts: str) -> SecretData:
    """Secret data from text values."""
    return {key: value.encode() for key, value in texts.items()}


def _dicts(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


SECRETS: Mapping[str, st.SearchStrategy[SecretData]] = {
    "user-roles": _dicts(**{"roles.yml": YAML_TEXTS.map(str.encode)}),
    "user-realm": _dicts(
        users=USERS_FILES.map(str.encode), users_roles=USERS_ROLES_FILES.map(str.encode)
    ),
    "user-transport-ca": _dicts(**{"ca.crt": BLOBS, "ca.key": BLOBS}),
    "user-http": _dicts(**{"tls.crt": BLOBS, "tls.key": BLOBS, "ca.crt": BLOBS}),
    "es-es-xpack-file-realm": _dicts(
        users=USERS_FILES.map(str.encode), users_roles=USERS_ROLES_FILES.map(str.encode)
    ),
    "es-es-elastic-user": _dicts(elastic=BLOBS),
    "es-es-transport-ca-internal": _dicts(**{"tls.crt": BLOBS, "tls.key": BLOBS}),
    "es-es-http-ca-internal": _dicts(**{"tls.crt": BLOBS, "tls.key": BLOBS}),
}

REFERENCES = st.fixed_dictionaries(
    {},
    optional={
        "auth": st.fixed_dictionaries(
            {},
            optional={
                "roles": st.just([{"secretName": "user-roles"}]),
                "fileRealm": st.just([{"secretName": "user-realm"}]),
            },
        ),
        "transport": st.just({"tls": {"certificate": {"secretName": "user-transport-ca"}}}),
        "http": st.just({"tls": {"certificate": {"secretName": "user-http"}}}),
    },
)


def cluster(**spec: Any) -> dict[str, Any]:
    """The cluster ``es`` with one master node set and ``spec``'s references."""
    return {
        "apiVersion": "elasticsearch.k8s.elastic.co/v1",
        "kind": "Elasticsearch",
        "metadata": {"name": "es", "namespace": "ns1", "uid": "uid-1"},
        "spec": {
            "version": "8.15.0",
            "nodeSets": [{"name": "m", "count": 2, "config": {"node.roles": ["master"]}}],
            **spec,
        },
    }


@st.composite
def clusters_and_secrets(
    draw: Callable[[st.SearchStrategy[Any]], Any],
) -> tuple[dict[str, Any], Existing]:
    """A cluster referencing some of the user's Secrets, and the Secrets (its own too) as found."""
    es = cluster(**draw(REFERENCES))
    existing: Existing = {}
    for name in draw(st.sets(st.sampled_from(sorted(SECRETS)))):
        existing.update(secret(name, draw(SECRETS[name])))
    return es, existing


def build(es: Mapping[str, Any], existing: Existing) -> None:
    """Validate, then build as the reconcile does: manifests, or a ValueError with a message."""
    if validate_elasticsearch(es):
        return
    passwords = itertools.count()
    try:
        children = desired_children(
            es, existing=existing, now=NOW, random_password=lambda: f"password-{next(passwords)}"
        )
    except ValueError as error:
        refusal = str(error)
    else:
        json.dumps(children, allow_nan=False)
        return
    assert refusal.strip()


@BUILD_SETTINGS
@given(clusters_and_secrets())
@example(
    (
        cluster(auth={"roles": [{"secretName": "user-roles"}]}),
        secret("user-roles", text_data(**{"roles.yml": "a: [b\n"})),
    )
)
@example(
    (
        cluster(auth={"roles": [{"secretName": "user-roles"}]}),
        secret("user-roles", text_data(**{"roles.yml": "a: !!python/object:os.system x\n"})),
    )
)
@example(
    (
        cluster(auth={"roles": [{"secretName": "user-roles"}]}),
        secret("user-roles", text_data(**{"roles.yml": "a: " + "[" * 600 + "]" * 600})),
    )
)
@example(
    (
        cluster(transport={"tls": {"certificate": {"secretName": "user-transport-ca"}}}),
        secret(
            "user-transport-ca",
            {
                "ca.crt": certificate_pem(RSA_KEY, ca=True),
                "ca.key": key_pem(RSA_KEY, password=b"secret"),
            },
        ),
    )
)
@example(
    (
        cluster(),
        secret(
            "es-es-http-ca-internal",
            {
                "tls.crt": certificate_pem(RSA_KEY, ca=True),
                "tls.key": key_pem(RSA_KEY, password=b"secret"),
            },
        ),
    )
)
def test_a_build_reading_any_secret_ends_in_manifests_or_a_refusal(
    case: tuple[dict[str, Any], Existing],
) -> None:
    build(*case)


def test_a_hash_cost_written_in_a_secret_is_not_paid_by_the_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file realm Secret is the operator's, but anyone who may edit Secrets may write a
    ``{PBKDF2}`` cost of a billion there; checking the kept hash must not cost more than the
    operator's own hashing (``PBKDF2_ITERATIONS``), or one edit stalls the cluster's reconcile."""
    costs: list[int] = []
    real_pbkdf2 = hashlib.pbkdf2_hmac

    def counting_pbkdf2(
        name: str, password: bytes, salt: bytes, iterations: int, dklen: int | None = None
    ) -> bytes:
        costs.append(iterations)
        return real_pbkdf2(name, password, salt, min(iterations, users.PBKDF2_ITERATIONS), dklen)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting_pbkdf2)
    lines = "".join(
        f"{user}:{{PBKDF2}}1000000000$c2FsdA==$eA==\n" for user in ("elastic", "elastic-internal")
    )
    build(cluster(), secret("es-es-xpack-file-realm", text_data(users=lines)))
    assert costs
    assert max(costs) <= users.PBKDF2_ITERATIONS


#: Every application kind with its config file (``spec.configRef`` names a Secret holding it),
#: and the spec fields it needs to get past validation.
APPLICATION_CONFIG_FILES: Mapping[str, tuple[str, dict[str, Any]]] = {
    "Kibana": ("kibana.yml", {}),
    "ApmServer": ("apm-server.yml", {}),
    "EnterpriseSearch": ("enterprise-search.yml", {}),
    "Beat": ("filebeat.yml", {"type": "filebeat", "deployment": {}}),
    "Agent": ("agent.yml", {"deployment": {}}),
    "Logstash": ("logstash.yml", {}),
    "ElasticMapsServer": ("elastic-maps-server.yml", {}),
    "PackageRegistry": ("config.yml", {}),
}
DEEP_YAML = "a: " + "[" * 600 + "]" * 600


def application(kind: str) -> dict[str, Any]:
    """An application of ``kind`` whose ``spec.configRef`` names the Secret ``app-config``."""
    _, required = APPLICATION_CONFIG_FILES[kind]
    return {
        "kind": kind,
        "metadata": {"name": "app", "namespace": "ns1", "uid": "uid-1"},
        "spec": {"version": "8.15.0", "configRef": {"secretName": "app-config"}, **required},
    }


def build_application(kind: str, config_text: str) -> None:
    """Validate and build ``kind`` with ``config_text`` as its referenced config file."""
    obj = application(kind)
    if validate_application(kind, obj):
        return
    config_file, _ = APPLICATION_CONFIG_FILES[kind]
    existing = secret("app-config", text_data(**{config_file: config_text}))
    try:
        children = application_children(kind, obj, existing=existing, now=NOW)
    except (ValueError, KeyError) as error:
        refusal = str(error)
    else:
        json.dumps(children, allow_nan=False)
        return
    assert refusal.strip()


# Eight kinds and a small set of texts: a smaller budget covers them.
@settings(BUILD_SETTINGS, max_examples=25)
@given(st.sampled_from(sorted(APPLICATION_CONFIG_FILES)), YAML_TEXTS)
@example("Kibana", DEEP_YAML)
@example("Agent", DEEP_YAML)
@example("Logstash", DEEP_YAML)
def test_an_application_reading_any_config_secret_builds_or_is_refused(
    kind: str, config_text: str
) -> None:
    build_application(kind, config_text)
