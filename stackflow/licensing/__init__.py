"""Operator licensing, as ECK does it: the license model, signature verification, trials.

Pure: no Kubernetes or network I/O, and the clock is always passed in as ``now``. Modules:
``model`` (the license document and its labels), ``signature`` (the signature layout and the
signable JSON), ``verify`` (validity, Secret parsing, the enterprise-features decision), ``issue``
(keys and signing); ``stackflow license`` lives in ``stackflow.cli.license``.
"""

from __future__ import annotations

from stackflow.licensing.model import (
    EnterpriseLicense,
    LicenseParseError,
    LicenseSpec,
    OperatorLicenseType,
    parse_license_json,
)
from stackflow.licensing.signature import SignatureError, signable_content_bytes
from stackflow.licensing.verify import (
    LicenseCheck,
    LicenseStatus,
    LicenseVerdict,
    check_license,
    current_enterprise_license,
    enterprise_features_enabled,
    invalid_license_message,
    license_status,
    load_public_key,
    parse_license_secret,
    trial_public_key_from_status,
    verdict_from_checks,
)

__all__ = [
    "EnterpriseLicense",
    "LicenseCheck",
    "LicenseParseError",
    "LicenseSpec",
    "LicenseStatus",
    "LicenseVerdict",
    "OperatorLicenseType",
    "SignatureError",
    "check_license",
    "current_enterprise_license",
    "enterprise_features_enabled",
    "invalid_license_message",
    "license_status",
    "load_public_key",
    "parse_license_json",
    "parse_license_secret",
    "signable_content_bytes",
    "trial_public_key_from_status",
    "verdict_from_checks",
]
