"""The cluster's users: the ``elastic`` password, the operator's internal users and the file realm.

Passwords are generated once (by the injected ``random_password``) and kept from the current Secrets
afterwards; file realm hashes are kept while they still match their password, so a reconcile of an
unchanged cluster rewrites nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable, Mapping

import yaml

from stackflow.stack.elasticsearch import names
from stackflow.stack.elasticsearch.context import BuildContext
from stackflow.stack.labels import CREDENTIALS_LABEL
from stackflow.stack.objects import Manifest, encode_secret_data

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


def pbkdf2_hash(password: str, *, salt: bytes, iterations: int = PBKDF2_ITERATIONS) -> str:
    """Return Elasticsearch's ``{PBKDF2}<cost>$<salt>$<hash>`` (PBKDF2-HMAC-SHA512, 256-bit key)."""
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, PBKDF2_KEY_BYTES)
    return (
        f"{PBKDF2_PREFIX}{iterations}${base64.b64encode(salt).decode()}"
        f"${base64.b64encode(digest).decode()}"
    )


def verify_pbkdf2(stored: str, password: str) -> bool:
    """Return whether ``stored`` (a ``{PBKDF2}`` hash) is a hash of ``password``."""
    if not stored.startswith(PBKDF2_PREFIX):
        return False
    try:
        cost, salt, _ = stored[len(PBKDF2_PREFIX) :].split("$")
        expected = pbkdf2_hash(password, salt=base64.b64decode(salt), iterations=int(cost))
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
    for source in auth.get("roles") or []:
        data = context.existing_secret_data(str(source.get("secretName", "")))
        loaded = yaml.safe_load(data.get("roles.yml", b"").decode(errors="replace") or "{}")
        if isinstance(loaded, dict):
            roles_yml.update(loaded)
    return users, roles, yaml.safe_dump(roles_yml, sort_keys=True) if roles_yml else ""


def file_realm_secret(
    context: BuildContext, *, passwords: Mapping[str, str], user_roles: Mapping[str, str]
) -> Manifest:
    """Return the file realm Secret: operator users (hashes kept when still valid) and user users."""
    current = context.existing_secret_data(names.file_realm_secret_name(context.name))
    current_hashes = parse_users_file(current.get("users", b"").decode(errors="replace"))
    users, roles, user_roles_yml = _user_file_realm(context)
    for user, password in passwords.items():
        kept = current_hashes.get(user, "")
        users[user] = (
            kept
            if verify_pbkdf2(kept, password)
            else pbkdf2_hash(password, salt=os.urandom(PBKDF2_SALT_BYTES))
        )
        roles.setdefault(user_roles[user], set()).add(user)
    roles_yml = yaml.safe_dump(PREDEFINED_ROLES, sort_keys=True) + user_roles_yml
    data = {
        "roles.yml": roles_yml,
        "users": "".join(f"{user}:{users[user]}\n" for user in sorted(users)),
        "users_roles": "".join(
            f"{role}:{','.join(sorted(members))}\n" for role, members in sorted(roles.items())
        ),
    }
    return context.secret(names.file_realm_secret_name(context.name), encode_secret_data(data))
