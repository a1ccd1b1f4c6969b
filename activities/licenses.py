"""Reading the operator's enterprise licenses from Kubernetes (the I/O half of ``stackflow.licensing``).

Operator licenses are Secrets labelled ``license.k8s.elastic.co/scope: operator`` in the operator
namespace or any managed namespace; they are listed through the scoped client (a license in an
unmanaged namespace does not count, as in ECK) and judged by ``stackflow.licensing`` against the
configured public keys and the trial public key of the ``trial-status`` Secret. Nothing is cached:
ECK re-reads on every check, and so does this reader.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stackflow.kube import errors
from stackflow.kube.resources import SECRETS
from stackflow.kube.scoped import ScopedClient
from stackflow.licensing import (
    EnterpriseLicense,
    LicenseCheck,
    current_enterprise_license,
    parse_license_secret,
    trial_public_key_from_status,
)
from stackflow.licensing.model import (
    LICENSE_SCOPE_LABEL,
    LICENSE_SCOPE_OPERATOR,
    TRIAL_STATUS_SECRET_NAME,
)

__all__ = [
    "OPERATOR_LICENSE_SELECTOR",
    "LicenseVerdict",
    "OperatorLicenseReader",
    "read_public_keys",
]

OPERATOR_LICENSE_SELECTOR = f"{LICENSE_SCOPE_LABEL}={LICENSE_SCOPE_OPERATOR}"


def read_public_keys(path: Path | None) -> tuple[bytes, ...]:
    """The configured ``license-public-key`` file's bytes (none configured: no keys)."""
    if path is None:
        return ()
    return (path.read_bytes(),)


@dataclass(frozen=True)
class LicenseVerdict:
    """The license gate's answer, with a one-line reason when enterprise features are off."""

    licensed: bool
    license: EnterpriseLicense | None
    reason: str
    checks: tuple[LicenseCheck, ...]


def verdict_from_checks(checks: Sequence[LicenseCheck], *, now: datetime) -> LicenseVerdict:
    """Decide from the judged license Secrets (pure)."""
    current = current_enterprise_license(checks, now=now)
    if current is not None:
        return LicenseVerdict(True, current, "", tuple(checks))
    if not checks:
        reason = "no operator license Secret found"
    else:
        problems = [
            f"{check.namespace}/{check.name}: {check.problem_at(now)}"
            for check in checks
            if check.problem_at(now) is not None
        ]
        reason = "no valid enterprise license: " + "; ".join(problems)
    return LicenseVerdict(False, None, reason, tuple(checks))


class OperatorLicenseReader:
    """Lists and verifies the operator license Secrets visible to the operator."""

    def __init__(
        self,
        client: ScopedClient,
        *,
        operator_namespace: str,
        public_keys: Sequence[bytes],
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        """Read through ``client``; verify non-trial licenses with ``public_keys`` (PEM or DER)."""
        self._client = client
        self.operator_namespace = operator_namespace
        self.public_keys = tuple(public_keys)
        self._clock = clock or (lambda: datetime.now(UTC))

    def now(self) -> datetime:
        """The reader's clock (injected in tests)."""
        return self._clock()

    async def license_secrets(self) -> list[dict[str, Any]]:
        """Operator-scope license Secrets of the operator namespace and the managed namespaces."""
        listed = await self._client.list(SECRETS, label_selector=OPERATOR_LICENSE_SELECTOR)
        matcher = self._client.matcher
        # The scoped client filters only in dynamic mode; a static list restricts visibility too.
        return [
            secret
            for secret in listed["items"]
            if matcher.name_matches(str((secret.get("metadata") or {}).get("namespace") or ""))
        ]

    async def trial_public_key(self) -> bytes | None:
        """The trial public key held by ``trial-status`` in the operator namespace, if any."""
        try:
            status = await self._client.get(
                SECRETS, namespace=self.operator_namespace, name=TRIAL_STATUS_SECRET_NAME
            )
        except errors.NotFound:
            return None
        return trial_public_key_from_status(status)

    async def checks(self) -> list[LicenseCheck]:
        """Every operator license Secret, parsed and verified."""
        secrets = await self.license_secrets()
        trial_key = await self.trial_public_key()
        now = self.now()
        return [
            parse_license_secret(
                secret, public_keys=self.public_keys, now=now, trial_public_key=trial_key
            )
            for secret in secrets
        ]

    async def verdict(self) -> LicenseVerdict:
        """Whether enterprise features are enabled now, and the license that enables them."""
        return verdict_from_checks(await self.checks(), now=self.now())
