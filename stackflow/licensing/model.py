"""ECK's operator (enterprise) license, as pydantic models, with its labels and constants.

The JSON shape is ECK's ``EnterpriseLicense`` (``pkg/controller/common/license/model.go``):
``{"license": {uid, type, issue_date_in_millis, start_date_in_millis, expiry_date_in_millis,
max_instances, max_resource_units, issued_to, issuer, signature, cluster_licenses}}``. Parsing is as
strict as Go's ``encoding/json`` where it matters (a string where a number belongs is an error) and
as lenient where Go is lenient (``null`` means "absent", unknown keys are ignored).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

LICENSE_SCOPE_LABEL = "license.k8s.elastic.co/scope"
LICENSE_SCOPE_OPERATOR = "operator"
LICENSE_SCOPE_ELASTICSEARCH = "elasticsearch"
LICENSE_TYPE_LABEL = "license.k8s.elastic.co/type"
LICENSE_NAME_LABEL = "license.k8s.elastic.co/name"
LICENSE_INVALID_ANNOTATION = "license.k8s.elastic.co/invalid"
COMMON_TYPE_LABEL = "common.k8s.elastic.co/type"
COMMON_TYPE_LICENSE = "license"
EULA_ANNOTATION = "elastic.co/eula"
EULA_ACCEPTED = "accepted"
LICENSE_FILE_NAME = "license"

ECK_LICENSE_ISSUER = "Elastic k8s operator"
TRIAL_STATUS_SECRET_NAME = "trial-status"
TRIAL_PUBKEY_KEY = "pubkey"
TRIAL_ACTIVATION_KEY = "in-trial-activation"
TRIAL_SECRET_NAME_ANNOTATION = "trial.k8s.elastic.co/secret-name"
TRIAL_SECRET_NAMESPACE_ANNOTATION = "trial.k8s.elastic.co/secret-namespace"
TRIAL_DURATION = timedelta(days=30)

EVENT_REASON_INVALID_LICENSE = "InvalidLicense"
EVENT_ACTION_LICENSE_CHECK = "LicenseCheck"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OperatorLicenseType(StrEnum):
    """The operator license types ECK knows."""

    BASIC = "basic"
    ENTERPRISE = "enterprise"
    ENTERPRISE_TRIAL = "enterprise_trial"
    # Earlier ECK versions wrote trials with a dash; they are still recognised.
    LEGACY_TRIAL = "enterprise-trial"


#: The label selector of operator (enterprise) license Secrets.
OPERATOR_LICENSE_SELECTOR = f"{LICENSE_SCOPE_LABEL}={LICENSE_SCOPE_OPERATOR}"
#: The license types a trial Secret may request.
TRIAL_TYPES = (OperatorLicenseType.ENTERPRISE_TRIAL, OperatorLicenseType.LEGACY_TRIAL)
#: The label selector of trial Secrets (the trial controller's primary objects).
TRIAL_SELECTOR = f"{LICENSE_TYPE_LABEL} in ({','.join(str(kind) for kind in TRIAL_TYPES)})"


# Higher ranks carry more features; unknown types rank like Go's zero value for a missing map key.
LICENSE_TYPE_RANK: dict[str, int] = {
    OperatorLicenseType.BASIC: -1,
    OperatorLicenseType.LEGACY_TRIAL: 0,
    OperatorLicenseType.ENTERPRISE_TRIAL: 1,
    OperatorLicenseType.ENTERPRISE: 2,
}


class LicenseParseError(ValueError):
    """A license document or Secret that cannot be read; the message is ECK's parse error."""


def to_millis(instant: datetime) -> int:
    """Milliseconds since the Unix epoch of a timezone-aware instant (truncated, as ECK's chrono)."""
    return (_require_aware(instant) - _EPOCH) // timedelta(milliseconds=1)


def from_millis(millis: int) -> datetime:
    """The UTC instant ``millis`` milliseconds after the Unix epoch."""
    return _EPOCH + timedelta(milliseconds=millis)


def _require_aware(instant: datetime) -> datetime:
    if instant.tzinfo is None:
        raise ValueError("a timezone-aware datetime is required (got a naive one)")
    return instant


class _GoJsonModel(BaseModel):
    """Decodes like Go's ``encoding/json`` into a struct: unknown keys ignored, ``null`` = absent."""

    # Built at the first license read, not at import: no license is read before ready.
    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def drop_nulls(cls, value: Any) -> Any:
        """Go leaves a field at its zero value on ``null``; dropping the key does the same."""
        if isinstance(value, dict):
            return {key: item for key, item in value.items() if item is not None}
        return value


class ClusterLicenseSpec(_GoJsonModel):
    """An Elasticsearch (per-cluster) license embedded in an enterprise license."""

    status: StrictStr = ""
    uid: StrictStr = ""
    type: StrictStr = ""
    issue_date: datetime | None = None
    issue_date_in_millis: StrictInt = 0
    expiry_date: datetime | None = None
    expiry_date_in_millis: StrictInt = 0
    max_nodes: StrictInt = 0
    max_resource_units: StrictInt = 0
    issued_to: StrictStr = ""
    issuer: StrictStr = ""
    start_date_in_millis: StrictInt = 0
    signature: StrictStr = ""


class ClusterLicense(_GoJsonModel):
    """The ``{"license": {...}}`` wrapper of a cluster license."""

    license: ClusterLicenseSpec = Field(default_factory=ClusterLicenseSpec)


class LicenseSpec(_GoJsonModel):
    """The body of an operator license; field order is ECK's, so documents read the same."""

    status: StrictStr = ""
    uid: StrictStr = ""
    # A plain string, not the enum: a wrong type must parse so it can be reported by name.
    type: StrictStr = ""
    issue_date: datetime | None = None
    issue_date_in_millis: StrictInt = 0
    expiry_date: datetime | None = None
    expiry_date_in_millis: StrictInt = 0
    max_instances: StrictInt = 0
    max_resource_units: StrictInt = 0
    issued_to: StrictStr = ""
    issuer: StrictStr = ""
    start_date_in_millis: StrictInt = 0
    signature: StrictStr = ""
    cluster_licenses: tuple[ClusterLicense, ...] = ()

    def is_trial(self) -> bool:
        """Whether this is a trial license (current or legacy trial type)."""
        return self.type in (OperatorLicenseType.ENTERPRISE_TRIAL, OperatorLicenseType.LEGACY_TRIAL)

    def is_valid_type(self) -> bool:
        """Whether the type is one ECK accepts for orchestration: enterprise or a trial."""
        return self.is_trial() or self.type == OperatorLicenseType.ENTERPRISE

    def is_eck_managed_trial(self) -> bool:
        """Whether this trial was issued by the operator itself (or is an empty one it may fill)."""
        return self.is_trial() and self.issuer in (ECK_LICENSE_ISSUER, "")

    def type_rank(self) -> int:
        """Rank for choosing among licenses: enterprise > trial > legacy trial."""
        return LICENSE_TYPE_RANK.get(self.type, 0)

    def start_time(self) -> datetime:
        """The instant from which the license is valid."""
        return from_millis(self.start_date_in_millis)

    def expiry_time(self) -> datetime:
        """The instant from which the license is no longer valid."""
        return from_millis(self.expiry_date_in_millis)

    def is_valid_at(self, now: datetime) -> bool:
        """ECK's date rule: ``start <= now < expiry`` (the signature is checked separately)."""
        # Microseconds, so an instant inside the expiry millisecond is still compared exactly.
        now_micros = (_require_aware(now) - _EPOCH) // timedelta(microseconds=1)
        return self.start_date_in_millis * 1000 <= now_micros < self.expiry_date_in_millis * 1000

    def missing_fields(self) -> list[str]:
        """Required fields that are unset, named as ECK names them (an empty trial has them all)."""
        checks = [
            ("spec.issuer", self.issuer == ""),
            ("spec.issued_to", self.issued_to == ""),
            ("spec.expiry_date_in_millis", self.expiry_date_in_millis == 0),
            ("spec.start_date_in_millis", self.start_date_in_millis == 0),
            ("spec.issue_date_in_millis", self.issue_date_in_millis == 0),
            ("spec.uid", self.uid == ""),
        ]
        return [name for name, missing in checks if missing]


class EnterpriseLicense(_GoJsonModel):
    """An operator license document: ``{"license": {...}}``."""

    license: LicenseSpec = Field(default_factory=LicenseSpec)

    def to_document(self) -> dict[str, Any]:
        """The JSON document ECK would write, with Go's ``omitempty`` fields left out when empty."""
        return {"license": _omit_empty(self.license.model_dump(mode="json"), _LICENSE_OMITEMPTY)}

    def to_json(self) -> str:
        """The document as compact JSON text."""
        return json.dumps(self.to_document(), ensure_ascii=False, separators=(",", ":"))


_LICENSE_OMITEMPTY = frozenset(
    {"status", "issue_date", "expiry_date", "max_instances", "max_resource_units", "signature"}
)
_CLUSTER_LICENSE_OMITEMPTY = frozenset(
    {"status", "issue_date", "expiry_date", "max_nodes", "max_resource_units"}
)


def _omit_empty(fields: dict[str, Any], omitempty: frozenset[str]) -> dict[str, Any]:
    document = {
        key: value
        for key, value in fields.items()
        if key not in omitempty or value not in (None, "", 0)
    }
    if "cluster_licenses" in document:
        document["cluster_licenses"] = [
            {"license": _omit_empty(entry["license"], _CLUSTER_LICENSE_OMITEMPTY)}
            for entry in document["cluster_licenses"]
        ]
    return document


def parse_license_json(raw: bytes | str) -> EnterpriseLicense:
    """Parse a license document and check its type, raising LicenseParseError with ECK's message."""
    try:
        parsed = EnterpriseLicense.model_validate_json(raw)
    except ValidationError as error:
        raise LicenseParseError(f"license cannot be unmarshalled: {_first_error(error)}") from error
    spec = parsed.license
    if not spec.is_valid_type():
        raise LicenseParseError(
            f"[{spec.type}] license [{spec.uid}] is not an enterprise license. Only orchestration "
            "licenses of type enterprise or enterprise_trial are supported"
        )
    return parsed


def _first_error(error: ValidationError) -> str:
    """One readable line for an event message: the first problem and where it is."""
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    return f"{location}: {first['msg']}" if location else str(first["msg"])
