"""The default image of a stack application: ECK's UBI suffix for old Elastic Maps Server images."""

from __future__ import annotations

import pytest

from stackflow.stack.apps.workload import image_suffix


@pytest.mark.parametrize(
    ("kind", "version", "suffix"),
    [
        ("ElasticMapsServer", "8.15.0", "-ubi"),
        ("ElasticMapsServer", "8.12.0", "-ubi"),
        ("ElasticMapsServer", "8.11.4", "-ubi8"),
        ("ElasticMapsServer", "7.17.16", "-ubi"),
        ("ElasticMapsServer", "7.17.15", "-ubi8"),
        ("ElasticMapsServer", "8.16.0", ""),
        ("ElasticMapsServer", "9.4.3", ""),
        ("ElasticMapsServer", "not-a-version", ""),
        ("Kibana", "8.15.0", ""),
        ("Beat", "7.17.0", ""),
    ],
)
def test_only_old_maps_server_images_carry_the_ubi_suffix(
    kind: str, version: str, suffix: str
) -> None:
    assert image_suffix(kind, version) == suffix
