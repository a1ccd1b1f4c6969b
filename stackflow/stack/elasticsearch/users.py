"""The cluster's users: the ``elastic`` password, the operator's internal users and the file realm.

Passwords are generated once (by the injected ``random_password``) and kept from the current Secrets
afterwards; file realm hashes are kept while they still match their password, so a reconcile of an
unchanged cluster rewrites nothing.

The association controllers add users too: in the cluster's namespace, Secrets labelled
``common.k8s.elastic.co/type: user`` (data ``name``, ``passwordHash``, ``userRoles``) become file
realm users, and Secrets labelled ``common.k8s.elastic.co/type: service-account-token`` (data
``name``, ``hash``) become lines of the ``service_tokens`` file. Both are read from ``existing``
on every build, so a removed Secret drops its user on the next reconcile.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from stackflow.models.objects import view
from stackflow.stack.digests import RecentDigests, digest_of
from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.context import BuildContext
from stackflow.stack.elasticsearch.policy import policy_config
from stackflow.stack.labels import CREDENTIALS_LABEL, ES_CLUSTER_NAME_LABEL, TYPE_LABEL
from stackflow.stack.objects import Manifest, decode_secret_data, encode_secret_data
from stackflow.stack.policies.stack_config.file_settings import state_hash
from stackflow.stack.policies.stack_config.secrets import ES_ROLES_HASH_ANNOTATION

ELASTIC_USER = "elastic"
INTERNAL_USER_ROLES = {
    "elastic-internal": "superuser",
    "elastic-internal-diagnostics": "elastic_internal_diagnostics",
    "elastic-internal-monitoring": "remote_monitoring_collector",
    "elastic-internal-pre-stop": "elastic_internal_pre_stop",
    "elastic-internal-probe": "elastic_internal_probe_user",
}
PREDEFINED_ROLES = {
    "elastic_internal_diagnostics": {"cluster": ["monitor", "monitor_snapshot", "manage_security"]},
    "elastic_internal_pre_stop": {"cluster": ["manage"]},
    "elastic_internal_probe_user": {"cluster": ["monitor"]},
}
PBKDF2_PREFIX = "{PBKDF2}"
PBKDF2_ITERATIONS = 10_000
PBKDF2_KEY_BYTES = 32
PBKDF2_SALT_BYTES = 32
ASSOCIATED_USER_TYPE = "user"
SERVICE_ACCOUNT_TOKEN_TYPE = "service-account-token"
SERVICE_TOKENS_FILE = "service_tokens"


@dataclass(frozen=True)
class AssociatedUser:
    """A user an association controller asks for (ECK's ``AssociatedUser``)."""

    name: str
    password_hash: str
    roles: tuple[str, ...]


def _typed_secrets(
    existing: Mapping[tuple[str, str], Mapping[str, Any]], *, es_name: str, secret_type: str
) -> Iterator[dict[str, bytes]]:
    """Yield the decoded data of the cluster's Secrets of ``secret_type``, by Secret name.

    The name order makes the output deterministic; when two Secrets declare the same user, the
    one whose name sorts last wins.
    """
    for kind, name in sorted(existing):
        if kind != "Secret":
            continue
        secret = existing[(kind, name)]
        labels = view(secret).labels
        if labels.get(TYPE_LABEL) == secret_type and labels.get(ES_CLUSTER_NAME_LABEL) == es_name:
            yield decode_secret_data(secret)


def associated_users(
    existing: Mapping[tuple[str, str], Mapping[str, Any]], *, es_name: str
) -> list[AssociatedUser]:
    """Return the association users of ``es_name`` found in ``existing``.

    A Secret without ``name`` or ``passwordHash`` is ignored: the association controller is still
    writing it, and a half-written user must not lock the other users out of the realm.
    """
    users: list[AssociatedUser] = []
    for data in _typed_secrets(existing, es_name=es_name, secret_type=ASSOCIATED_USER_TYPE):
        name = data.get("name", b"").decode(errors="replace").strip()
        password_hash = data.get("passwordHash", b"").decode(errors="replace").strip()
        if not name or not password_hash:
            continue
        roles = data.get("userRoles", b"").decode(errors="replace").split(",")
        users.append(
            AssociatedUser(
                name=name,
                password_hash=password_hash,
                roles=tuple(role.strip() for role in roles if role.strip()),
            )
        )
    return users


def service_account_tokens(
    existing: Mapping[tuple[str, str], Mapping[str, Any]], *, es_name: str
) -> dict[str, str]:
    """Return ``namespace/service/token`` → hash for the service account tokens of ``es_name``."""
    tokens: dict[str, str] = {}
    for data in _typed_secrets(existing, es_name=es_name, secret_type=SERVICE_ACCOUNT_TOKEN_TYPE):
        name = data.get("name", b"").decode(errors="replace").strip()
        token_hash = data.get("hash", b"").decode(errors="replace").strip()
        if name and token_hash:
            tokens[name] = token_hash
    return tokens


def render_service_tokens(tokens: Mapping[str, str]) -> str:
    """Render the ``service_tokens`` file: ``name:hash`` lines sorted by name (ECK's format)."""
    return "".join(f"{name}:{tokens[name]}\n" for name in sorted(tokens))


def pbkdf2_hash(password: str, *, salt: bytes, iterations: int = PBKDF2_ITERATIONS) -> str:
    """Return Elasticsearch's ``{PBKDF2}<cost>$<salt>$<hash>`` (PBKDF2-HMAC-SHA512, 256-bit key)."""
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, PBKDF2_KEY_BYTES)
    return (
        f"{PBKDF2_PREFIX}{iterations}${base64.b64encode(salt).decode()}"
        f"${base64.b64encode(digest).decode()}"
    )


#: Pairs (hash, password) that matched lately: every reconcile checks the same users again.
_MATCHED = RecentDigests(4096)


def verify_pbkdf2(stored: str, password: str) -> bool:
    """Return whether ``stored`` (a ``{PBKDF2}`` hash) is a hash of ``password``.

    A pair that matched lately is not hashed again (only its digest is remembered).
    """
    if not stored.startswith(PBKDF2_PREFIX):
        return False
    pair = digest_of(stored.encode(), password.encode())
    if pair in _MATCHED:
        return True
    if _hash_matches(stored, password):
        _MATCHED.add(pair)
        return True
    return False


def new_pbkdf2_hash(password: str) -> str:
    """A ``{PBKDF2}`` hash of ``password`` with a fresh salt, remembered as matching: the next
    reconcile, which reads it back from the Secret, verifies it without hashing again."""
    stored = pbkdf2_hash(password, salt=os.urandom(PBKDF2_SALT_BYTES))
    _MATCHED.add(digest_of(stored.encode(), password.encode()))
    return stored


def _hash_matches(stored: str, password: str) -> bool:
    try:
        cost, salt, _ = stored[len(PBKDF2_PREFIX) :].split("$")
        iterations = int(cost)
        if not 0 < iterations <= PBKDF2_ITERATIONS:
            # Anyone who may edit the Secret may write a cost of a billion: never pay more than
            # the operator's own hashing; such a hash is replaced by a new one.
            return False
        expected = pbkdf2_hash(password, salt=base64.b64decode(salt), iterations=iterations)
    except ValueError:
        return False
    return hmac.compare_digest(expected, stored)


def keep_or_generate_passwords(
    current: Mapping[str, bytes], users: list[str], random_password: Callable[[], str]
) -> dict[str, str]:
    """Return a password per user: the current one when set, else a freshly generated one."""
    passwords: dict[str, str] = {}
    for user in users:
        kept = current.get(user, b"").decode(errors="replace")
        passwords[user] = kept or random_password()
    return passwords


def parse_users_file(text: str) -> dict[str, str]:
    """Parse a file realm ``users`` file (``name:hash`` lines) into a mapping."""
    users: dict[str, str] = {}
    for line in text.splitlines():
        name, separator, password_hash = line.strip().partition(":")
        if separator and name:
            users[name] = password_hash
    return users


def parse_users_roles_file(text: str) -> dict[str, set[str]]:
    """Parse a ``users_roles`` file (``role:user1,user2`` lines) into role → users."""
    roles: dict[str, set[str]] = {}
    for line in text.splitlines():
        role, separator, members = line.strip().partition(":")
        if separator and role:
            roles.setdefault(role, set()).update(m for m in members.split(",") if m)
    return roles


def elastic_user_password(context: BuildContext) -> str | None:
    """Return the ``elastic`` password (kept when present), or None when the user is disabled."""
    if (context.spec.get("auth") or {}).get("disableElasticUser"):
        return None
    current = context.existing_secret_data(names.elastic_user_secret_name(context.name))
    return keep_or_generate_passwords(current, [ELASTIC_USER], context.random_password)[
        ELASTIC_USER
    ]


def user_secrets(context: BuildContext) -> list[Manifest]:
    """Return the elastic user (soft-owned), internal users and file realm Secrets."""
    elastic_password = elastic_user_password(context)
    internal_current = context.existing_secret_data(names.internal_users_secret_name(context.name))
    internal_passwords = keep_or_generate_passwords(
        internal_current, sorted(INTERNAL_USER_ROLES), context.random_password
    )
    credentials = {CREDENTIALS_LABEL: "true"}
    secrets: list[Manifest] = []
    passwords = dict(internal_passwords)
    user_roles = dict(INTERNAL_USER_ROLES)
    if elastic_password is not None:
        passwords[ELASTIC_USER] = elastic_password
        user_roles[ELASTIC_USER] = "superuser"
        secrets.append(
            context.secret(
                names.elastic_user_secret_name(context.name),
                encode_secret_data({ELASTIC_USER: elastic_password}),
                labels=credentials,
                soft_owned=True,
            )
        )
    secrets.append(
        context.secret(
            names.internal_users_secret_name(context.name),
            encode_secret_data(internal_passwords),
            labels=credentials,
        )
    )
    secrets.append(file_realm_secret(context, passwords=passwords, user_roles=user_roles))
    return secrets


def _user_file_realm(context: BuildContext) -> tuple[dict[str, str], dict[str, set[str]], str]:
    """Collect users, role mappings and roles from the Secrets the spec's ``auth`` references."""
    auth = context.spec.get("auth") or {}
    users: dict[str, str] = {}
    roles: dict[str, set[str]] = {}
    roles_yml: dict[str, object] = {}
    for source in auth.get("fileRealm") or []:
        data = context.existing_secret_data(str(source.get("secretName", "")))
        users.update(parse_users_file(data.get("users", b"").decode(errors="replace")))
        for role, members in parse_users_roles_file(
            data.get("users_roles", b"").decode(errors="replace")
        ).items():
            roles.setdefault(role, set()).update(members)
    for index, source in enumerate(auth.get("roles") or []):
        secret_name = str(source.get("secretName", ""))
        data = context.existing_secret_data(secret_name)
        text = data.get("roles.yml", b"").decode(errors="replace") or "{}"
        try:
            loaded = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as error:
            problem = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(
                f"spec.auth.roles[{index}]: roles.yml of Secret {secret_name!r} is not "
                f"readable YAML: {problem}"
            ) from error
        if isinstance(loaded, dict):
            roles_yml.update(loaded)
    # The StackConfigPolicies' securityRoles, written by the policy controller.
    roles_yml.update(policy_config(context).roles)
    return users, roles, yaml.safe_dump(roles_yml, sort_keys=True) if roles_yml else ""


def file_realm_secret(
    context: BuildContext, *, passwords: Mapping[str, str], user_roles: Mapping[str, str]
) -> Manifest:
    """Return the file realm Secret: operator, association and user-provided users, service tokens.

    Operator users win over association users, which win over the spec's ``auth.fileRealm``, so a
    user Secret cannot replace the operator's own credentials.
    """
    current = context.existing_secret_data(names.file_realm_secret_name(context.name))
    current_hashes = parse_users_file(current.get("users", b"").decode(errors="replace"))
    users, roles, user_roles_yml = _user_file_realm(context)
    for associated in associated_users(context.existing, es_name=context.name):
        if associated.name in passwords:
            continue  # never let a labelled Secret redefine an operator user or its roles
        users[associated.name] = associated.password_hash
        for role in associated.roles:
            roles.setdefault(role, set()).add(associated.name)
    for user, password in passwords.items():
        kept = current_hashes.get(user, "")
        users[user] = kept if verify_pbkdf2(kept, password) else new_pbkdf2_hash(password)
        roles.setdefault(user_roles[user], set()).add(user)
    roles_yml = yaml.safe_dump(PREDEFINED_ROLES, sort_keys=True) + user_roles_yml
    data = {
        "roles.yml": roles_yml,
        "users": "".join(f"{user}:{users[user]}\n" for user in sorted(users)),
        "users_roles": "".join(
            f"{role}:{','.join(sorted(members))}\n" for role, members in sorted(roles.items())
        ),
        SERVICE_TOKENS_FILE: render_service_tokens(
            service_account_tokens(context.existing, es_name=context.name)
        ),
    }
    secret = context.secret(names.file_realm_secret_name(context.name), encode_secret_data(data))
    # ECK's mark of the policies' roles this file realm holds: their hash, empty without any.
    policy_roles = policy_config(context).roles
    secret["metadata"]["annotations"] = {
        ES_ROLES_HASH_ANNOTATION: state_hash(policy_roles) if policy_roles else ""
    }
    return secret
