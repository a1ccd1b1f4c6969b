"""Raw (protobuf) requests to a running kubesim, shared by the protobuf test modules: the media
types kubectl sends, the generated classes (or a skip), and one raw request."""

from __future__ import annotations

import aiohttp
import pytest

from kubesim import protobuf
from kubesim.proto_json import Catalog
from kubesim.testing import KubeSim

PROTOBUF = "application/vnd.kubernetes.protobuf"
# What kubectl's typed clients send.
KUBECTL_ACCEPT = f"{PROTOBUF},application/json"


def require_catalog() -> Catalog:
    """The generated classes, or a skip saying how to get them."""
    try:
        return protobuf.catalog()
    except protobuf.UnavailableError:
        pytest.skip("kubesim protobuf classes not generated: run make proto")


async def call(
    sim: KubeSim,
    method: str,
    path: str,
    *,
    data: bytes | None = None,
    content_type: str | None = None,
    accept: str | None = None,
) -> tuple[int, str, bytes]:
    """One raw HTTP request: ``(status, Content-Type, body bytes)``."""
    headers = {}
    if content_type:
        headers["Content-Type"] = content_type
    if accept:
        headers["Accept"] = accept
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, sim.url + path, data=data, headers=headers) as response,
    ):
        return response.status, response.headers.get("Content-Type", ""), await response.read()
