"""The operator license reader remembers signature verdicts per Secret version, never validity."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from stackflow.kube import errors
from stackflow.kube.operator_licenses import OperatorLicenseReader
from stackflow.kube.reader import UNKNOWN, Unknown
from stackflow.kube.scoped import ScopedClient
from stackflow.licensing.issue import (
    generate_private_key,
    issue_license,
    public_key_pem,
    trial_status_pubkey,
)
from stackflow.licensing.model import ECK_LICENSE_ISSUER, OperatorLicenseType
from stackflow.models.kinds import Kind

OPERATOR_NAMESPACE = "elastic-system"
START = datetime(2025, 1, 1, tzinfo=UTC)


class _Matcher:
    def name_matches(self, namespace: str) -> bool:
        return True


class _FakeSecrets:
    """The two calls the reader makes: list the license Secrets, get ``trial-status``."""

    def __init__(self) -> None:
        self.matcher = _Matcher()
        self.items: list[dict[str, Any]] = []
        self.trial_key: rsa.RSAPrivateKey | None = None
        self.trial_status_reads = 0
        self.trial_status_version = "1"

    async def list(self, resource: Kind, *, label_selector: str) -> dict[str, Any]:
        return {"items": list(self.items)}

    async def get(self, resource: Kind, *, namespace: str, name: str) -> dict[str, Any]:
        self.trial_status_reads += 1
        if self.trial_key is None:
            raise errors.NotFound(f"secrets {name!r} not found")
        pubkey = trial_status_pubkey(self.trial_key.public_key())
        return {
            "metadata": {"resourceVersion": self.trial_status_version},
            "data": {"pubkey": base64.b64encode(pubkey).decode()},
        }


class _InformerCache:
    """The informer cache as the reader uses it: only the version of ``trial-status``."""

    def __init__(self, version: str | None) -> None:
        self.version = version

    def get(self, resource: Kind, *, namespace: str | None, name: str) -> Unknown:
        return UNKNOWN

    def list(self, resource: Kind, *, namespace: str | None, label_selector: str | None) -> Unknown:
        return UNKNOWN

    def resource_version(self, resource: Kind, *, namespace: str | None, name: str) -> str | None:
        return self.version


class _Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def signing_keys() -> tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey]:
    return generate_private_key(), generate_private_key()


def license_secret(
    key: rsa.RSAPrivateKey, *, resource_version: str, days: int = 30, trial: bool = False
) -> dict[str, Any]:
    document = issue_license(
        private_key=key,
        now=START,
        validity=timedelta(days=days),
        license_type=OperatorLicenseType.ENTERPRISE_TRIAL
        if trial
        else OperatorLicenseType.ENTERPRISE,
        issuer=ECK_LICENSE_ISSUER if trial else "test",
    ).to_json()
    return {
        "metadata": {
            "name": "eck-license",
            "namespace": OPERATOR_NAMESPACE,
            "uid": "uid-1",
            "resourceVersion": resource_version,
        },
        "data": {"license": base64.b64encode(document.encode()).decode()},
    }


@pytest.mark.parametrize(
    ("change", "verifications", "licensed_after"),
    [
        pytest.param("nothing", 1, True, id="unchanged-secret-is-not-re-verified"),
        pytest.param("resource-version", 2, False, id="new-resource-version-is-re-verified"),
        pytest.param("public-keys", 2, False, id="new-configured-keys-re-verify"),
        pytest.param("clock", 1, False, id="expiry-is-judged-at-every-call"),
    ],
)
async def test_verdicts_are_remembered_per_secret_version(
    signing_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey],
    change: str,
    verifications: int,
    licensed_after: bool,
) -> None:
    key, other_key = signing_keys
    secrets, clock = _FakeSecrets(), _Clock()
    secrets.items = [license_secret(key, resource_version="1")]
    reader = OperatorLicenseReader(
        cast(ScopedClient, secrets),
        operator_namespace=OPERATOR_NAMESPACE,
        public_keys=[public_key_pem(key.public_key())],
        clock=clock,
    )
    first = await reader.verdict()
    assert first.licensed

    if change == "resource-version":
        secrets.items = [license_secret(other_key, resource_version="2")]
    elif change == "public-keys":
        reader.public_keys = (public_key_pem(other_key.public_key()),)
    elif change == "clock":
        clock.now = START + timedelta(days=31)
    second = await reader.verdict()

    assert reader.verifications == verifications
    assert second.licensed is licensed_after
    assert bool(second.reason) is not licensed_after


async def test_a_remembered_check_reports_its_status_at_the_current_time(
    signing_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey],
) -> None:
    key, _ = signing_keys
    secrets, clock = _FakeSecrets(), _Clock()
    secrets.items = [license_secret(key, resource_version="1", days=1)]
    reader = OperatorLicenseReader(
        cast(ScopedClient, secrets),
        operator_namespace=OPERATOR_NAMESPACE,
        public_keys=[public_key_pem(key.public_key())],
        clock=clock,
    )
    (before,) = await reader.checks()
    clock.now = START + timedelta(days=2)
    (after,) = await reader.checks()

    assert (before.status.value, after.status.value) == ("Valid", "Expired")
    assert reader.verifications == 1


async def test_an_enterprise_verdict_is_reused_without_reading_trial_status(
    signing_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey],
) -> None:
    key, _ = signing_keys
    secrets = _FakeSecrets()
    secrets.items = [license_secret(key, resource_version="1")]
    reader = OperatorLicenseReader(
        cast(ScopedClient, secrets),
        operator_namespace=OPERATOR_NAMESPACE,
        public_keys=[public_key_pem(key.public_key())],
        clock=_Clock(),
    )
    for _ in range(3):
        assert (await reader.verdict()).licensed

    assert (reader.verifications, secrets.trial_status_reads) == (1, 1)


def trial_reader(
    trial_key: rsa.RSAPrivateKey, *, cache: _InformerCache | None = None
) -> tuple[_FakeSecrets, OperatorLicenseReader]:
    """An operator-managed trial signed with ``trial_key`` (its ``trial-status`` holding the key)
    and a reader of it, with no configured public keys."""
    secrets = _FakeSecrets()
    secrets.trial_key = trial_key
    secrets.items = [license_secret(trial_key, resource_version="1", trial=True)]
    reader = OperatorLicenseReader(
        cast(ScopedClient, secrets),
        operator_namespace=OPERATOR_NAMESPACE,
        public_keys=(),
        clock=_Clock(),
        cache=cache,
    )
    return secrets, reader


@pytest.mark.parametrize(
    ("new_trial_key", "verifications", "licensed_after"),
    [
        pytest.param(False, 1, True, id="same-trial-key-reuses-the-verdict"),
        pytest.param(True, 2, False, id="new-trial-key-re-verifies"),
    ],
)
async def test_a_trial_verdict_is_reused_only_with_the_same_trial_key(
    signing_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey],
    new_trial_key: bool,
    verifications: int,
    licensed_after: bool,
) -> None:
    trial_key, other_key = signing_keys
    secrets, reader = trial_reader(trial_key)
    assert (await reader.verdict()).licensed

    if new_trial_key:
        secrets.trial_key = other_key
    second = await reader.verdict()

    assert reader.verifications == verifications
    assert second.licensed is licensed_after


@pytest.mark.parametrize(
    ("cached_after", "reads"),
    [
        pytest.param("1", 1, id="the-cache-holds-the-version-read"),
        pytest.param("2", 2, id="the-cache-holds-a-newer-version"),
        pytest.param(None, 2, id="the-cache-holds-none"),
    ],
)
async def test_the_trial_key_is_read_again_only_when_the_cache_shows_a_new_version(
    signing_keys: tuple[rsa.RSAPrivateKey, rsa.RSAPrivateKey],
    cached_after: str | None,
    reads: int,
) -> None:
    trial_key, _ = signing_keys
    cache = _InformerCache("1")
    secrets, reader = trial_reader(trial_key, cache=cache)
    assert (await reader.verdict()).licensed

    cache.version = cached_after
    second = await reader.verdict()

    assert secrets.trial_status_reads == reads
    assert second.licensed
