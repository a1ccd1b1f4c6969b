"""Reading the operator's enterprise licenses from Kubernetes (the I/O half of ``stackflow.licensing``).

An adapter: ``stackflow run`` builds one `OperatorLicenseReader` and hands that object to the
reconciles' context, the watchers (events on license Secrets that do not count) and the webhooks
(the enterprise-license annotation).

Operator licenses are Secrets labelled ``license.k8s.elastic.co/scope: operator`` in the operator
namespace or any managed namespace; they are listed from the synced cache of the license-Secret
informer when there is one (an ``ObjectReader``), else through the scoped client, and filtered by
the namespace scope either way (a license in an unmanaged namespace does not count, as in ECK);
they are judged by ``stackflow.licensing`` against the configured public keys and the trial
public key of the ``trial-status`` Secret. The Secrets are
re-read on every check, as ECK does; only the signature verdict of each Secret is remembered, keyed
by its (uid, resourceVersion) and the keys it was verified with (the trial key only for an
operator-managed trial, so ``trial-status`` is read only when a trial or a new Secret needs it),
because the RSA verification is the expensive part and cannot change while none of those does.
Validity dates are judged against the clock on every call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stackflow.kube import errors
from stackflow.kube.reader import UNKNOWN, ObjectReader
from stackflow.kube.scoped import ScopedClient
from stackflow.licensing import (
    LicenseCheck,
    LicenseVerdict,
    parse_license_secret,
    trial_public_key_from_status,
    verdict_from_checks,
)
from stackflow.licensing.model import OPERATOR_LICENSE_SELECTOR, TRIAL_STATUS_SECRET_NAME
from stackflow.models.kinds import SECRETS
from stackflow.models.objects import view

__all__ = [
    "OperatorLicenseReader",
    "RememberedCheck",
    "VerificationKey",
    "read_public_keys",
    "verification_key",
]


@dataclass(frozen=True)
class VerificationKey:
    """What a Secret's signature verdict depends on: its version and the configured keys.

    An operator-managed trial also depends on the trial key of ``trial-status``, which is
    remembered with the verdict (`RememberedCheck`) and compared when the verdict is reused, so
    that Secret is read only when a trial or a changed Secret needs it.
    """

    uid: str
    resource_version: str
    public_keys: tuple[bytes, ...]


@dataclass(frozen=True)
class RememberedCheck:
    """A verified license Secret and the trial key it was verified with."""

    check: LicenseCheck
    trial_public_key: bytes | None

    @property
    def uses_trial_key(self) -> bool:
        """Whether the verdict came from the trial key (an operator-managed trial)."""
        license = self.check.license
        return license is not None and license.license.is_eck_managed_trial()


def verification_key(
    secret: Mapping[str, Any], *, public_keys: tuple[bytes, ...]
) -> VerificationKey | None:
    """The cache key of a license Secret's verdict; None when the Secret has no uid/resourceVersion."""
    meta = view(secret)
    uid, resource_version = meta.uid, meta.resource_version
    if not uid or not resource_version:
        return None
    return VerificationKey(str(uid), str(resource_version), public_keys)


def read_public_keys(path: Path | None) -> tuple[bytes, ...]:
    """The configured ``license-public-key`` file's bytes (none configured: no keys)."""
    if path is None:
        return ()
    return (path.read_bytes(),)


class OperatorLicenseReader:
    """Lists and verifies the operator license Secrets visible to the operator."""

    def __init__(
        self,
        client: ScopedClient,
        *,
        operator_namespace: str,
        public_keys: Sequence[bytes],
        clock: Callable[[], datetime] | None = None,
        cache: ObjectReader | None = None,
    ) -> None:
        """Read from ``cache`` when it can answer, else through ``client``; verify non-trial
        licenses with ``public_keys`` (PEM or DER)."""
        self._client = client
        self.cache = cache
        self.operator_namespace = operator_namespace
        self.public_keys = tuple(public_keys)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._verified: dict[VerificationKey, RememberedCheck] = {}
        #: The trial public key last read, with the resourceVersion of ``trial-status`` it came from.
        self._trial_key: tuple[str, bytes | None] | None = None
        #: Secrets parsed and verified (cache misses): how often the cryptography actually ran.
        self.verifications = 0

    def now(self) -> datetime:
        """The reader's clock (injected in tests)."""
        return self._clock()

    async def license_secrets(self) -> list[dict[str, Any]]:
        """Operator-scope license Secrets of the operator namespace and the managed namespaces."""
        cached = (
            UNKNOWN
            if self.cache is None
            else self.cache.list(SECRETS, namespace=None, label_selector=OPERATOR_LICENSE_SELECTOR)
        )
        if cached is UNKNOWN:
            listed = await self._client.list(SECRETS, label_selector=OPERATOR_LICENSE_SELECTOR)
            items: list[dict[str, Any]] = listed["items"]
        else:
            items = cached
        matcher = self._client.matcher
        # The cache is unscoped and the scoped client filters only in dynamic mode; a static
        # list restricts visibility too. The operator namespace always matches.
        return [secret for secret in items if matcher.name_matches(view(secret).namespace)]

    async def trial_public_key(self) -> bytes | None:
        """The trial public key held by ``trial-status`` in the operator namespace, if any.

        Remembered with the Secret's resourceVersion: while the informer cache holds that same
        version, the key is not read again (every license check of a trial asks for it).
        """
        cached_version = (
            None
            if self.cache is None
            else self.cache.resource_version(
                SECRETS, namespace=self.operator_namespace, name=TRIAL_STATUS_SECRET_NAME
            )
        )
        if cached_version is not None and self._trial_key is not None:
            version, key = self._trial_key
            if version == cached_version:
                return key
        try:
            status = await self._client.get(
                SECRETS, namespace=self.operator_namespace, name=TRIAL_STATUS_SECRET_NAME
            )
        except errors.NotFound:
            self._trial_key = None
            return None
        key = trial_public_key_from_status(status)
        self._trial_key = (view(status).resource_version, key)
        return key

    async def checks(self) -> list[LicenseCheck]:
        """Every operator license Secret, parsed and verified, with its status judged now."""
        secrets = await self.license_secrets()
        now = self.now()
        trial_keys: list[bytes | None] = []

        async def trial_key() -> bytes | None:
            # Read at most once per check, and only when a verdict depends on it.
            if not trial_keys:
                trial_keys.append(await self.trial_public_key())
            return trial_keys[0]

        kept: dict[VerificationKey, RememberedCheck] = {}
        checks: list[LicenseCheck] = []
        for secret in secrets:
            key = verification_key(secret, public_keys=self.public_keys)
            remembered = self._verified.get(key) if key is not None else None
            if (
                remembered is not None
                and remembered.uses_trial_key
                and remembered.trial_public_key != await trial_key()
            ):
                remembered = None
            if remembered is None:
                used = await trial_key()
                check = parse_license_secret(
                    secret, public_keys=self.public_keys, now=now, trial_public_key=used
                )
                remembered = RememberedCheck(check, used)
                self.verifications += 1
            if key is not None:
                kept[key] = remembered
            # The remembered verdict was judged at its own instant: the dates are judged again.
            check = remembered.check
            checks.append(dataclasses.replace(check, status=check.status_at(now)))
        # Only the Secrets listed now stay remembered, so deleted or updated ones do not pile up.
        self._verified = kept
        return checks

    async def check(self, secret: Mapping[str, Any]) -> LicenseCheck:
        """One license Secret, parsed and verified now (not remembered: a watch event is rare).

        The trial key is read only for an operator-managed trial, the one license it verifies.
        """
        now = self.now()
        check = parse_license_secret(secret, public_keys=self.public_keys, now=now)
        if check.license is not None and check.license.license.is_eck_managed_trial():
            trial_key = await self.trial_public_key()
            check = parse_license_secret(
                secret, public_keys=self.public_keys, now=now, trial_public_key=trial_key
            )
        return check

    async def verdict(self) -> LicenseVerdict:
        """Whether enterprise features are enabled now, and the license that enables them."""
        return verdict_from_checks(await self.checks(), now=self.now())

    async def licensed(self) -> bool:
        """Whether enterprise features are enabled now (the webhooks' question)."""
        return (await self.verdict()).licensed
