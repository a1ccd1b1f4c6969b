"""Robustness: malformed paths, queries, content types and bodies always get a JSON answer.

A seeded random generator builds a bounded number of requests; every answer must be a ``Status``
whose ``code`` matches the HTTP status (or a valid object / watch stream), never a crash, and the
server must still answer ``/version`` afterwards.
"""

from __future__ import annotations

import json
import random
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from yarl import URL

from kubesim.testing import KubeSim

REQUESTS_PER_SEED = 150

PATH_PIECES = [
    "api",
    "apis",
    "v1",
    "apps",
    "namespaces",
    "default",
    "nope",
    "configmaps",
    "deployments",
    "pods",
    "status",
    "scale",
    "finalize",
    "watch",
    "x",
    "example.com",
    "widgets",
    "UPPER",
    "%25",
    "a.b",
    "-",
    "0",
    "openapi",
    "v3",
    "version",
]
# Real resource URLs, so that most requests reach the verbs rather than the 404 of routing.
RESOURCE_PATHS = [
    "/api/v1/namespaces",
    "/api/v1/namespaces/default",
    "/api/v1/namespaces/x/status",
    "/api/v1/namespaces/x/finalize",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/configmaps/x",
    "/api/v1/namespaces/default/configmaps/x/status",
    "/api/v1/configmaps",
    "/api/v1/watch/namespaces/default/configmaps",
    "/api/v1/watch/namespaces/default/configmaps/x",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/apps/v1/namespaces/default/deployments/x",
    "/apis/apps/v1/namespaces/default/deployments/x/scale",
    "/apis/apps/v1/namespaces/default/deployments/x/status",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x",
    "/apis/coordination.k8s.io/v1/namespaces/default/leases/x",
]
QUERY_KEYS = [
    "watch",
    "limit",
    "continue",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "allowWatchBookmarks",
    "dryRun",
    "fieldValidation",
    "fieldManager",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "includeObject",
    "bogus",
]
QUERY_VALUES = [
    "",
    "true",
    "True",
    "1",
    "yes",
    "-1",
    "500",
    "abc",
    "All",
    "Strict",
    "Exact",
    "NotOlderThan",
    "env in (a",
    "spec.foo=x",
    "metadata.name=x",
    "!!",
    "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
    "99999999999999999999",
]
CONTENT_TYPES = [
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
    "",
    "application/json; charset=utf-8",
]


def random_body(rng: random.Random) -> bytes:
    """A body that is sometimes a plausible object and often not."""
    choice = rng.randrange(10)
    if choice == 0:
        return b""
    if choice == 1:
        return b"k8s\x00\x0a\x02v1"
    if choice == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if choice == 3:
        return b"[" * 5000 + b"]" * 5000
    if choice == 4:
        return b"{not json"
    if choice == 5:
        return b"a: [b\n  - : :"
    if choice == 6:
        return json.dumps(rng.choice([[], [{"op": "add"}], 1, "s", None, True])).encode()
    body: dict[str, Any] = {
        "apiVersion": rng.choice(["v1", "apps/v1", "example.com/v1", "", 3]),
        "kind": rng.choice(["ConfigMap", "Deployment", "Namespace", "Widget", "", None]),
        "metadata": rng.choice(
            [
                {"name": rng.choice(["x", "X!", "", "a" * 300])},
                {"generateName": "g-"},
                "notadict",
                {"name": "x", "namespace": "other", "resourceVersion": "7"},
                {"name": "x", "labels": {"k": 1}},
            ]
        ),
        rng.choice(["data", "spec", "status", "foo"]): rng.choice(
            [{"a": "b"}, {"replicas": "three"}, [1, 2], None, {"size": 1}]
        ),
    }
    return json.dumps(body).encode()


def random_request(rng: random.Random) -> tuple[str, str, str, bytes]:
    """(method, path with query, content type, body)."""
    method = rng.choice(["GET", "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])
    if rng.random() < 0.6:
        path = rng.choice(RESOURCE_PATHS)
    else:
        path = "/" + "/".join(rng.choice(PATH_PIECES) for _ in range(rng.randrange(0, 8)))
    if rng.random() < 0.3:
        path += "/"
    query = "&".join(
        f"{rng.choice(QUERY_KEYS)}={quote(rng.choice(QUERY_VALUES), safe='')}"
        for _ in range(rng.randrange(0, 4))
    )
    target = f"{path}?{query}" if query else path
    return method, target, rng.choice(CONTENT_TYPES), random_body(rng)


def check_answer(method: str, *, status: int, content_type: str, text: str) -> None:
    """Every answer is JSON; errors are a Status with a matching code; nothing crashed."""
    assert status != 500, text
    if method == "HEAD" or content_type.startswith("text/plain"):
        return
    assert content_type.startswith("application/json"), (status, content_type, text[:200])
    # An empty body is an empty watch stream (it timed out without events).
    lines = text.splitlines()
    assert lines or status == 200, (status, text)
    documents = [json.loads(line) for line in lines]
    if status >= 400:
        assert len(documents) == 1
        assert documents[0]["kind"] == "Status"
        assert documents[0]["code"] == status


@pytest.mark.parametrize("seed", range(1, 6))
async def test_malformed_requests_get_json_answers(seed: int) -> None:
    """A seeded batch of random requests never crashes the server."""
    rng = random.Random(seed)
    async with KubeSim(watch_timeout_seconds=0.2) as sim, aiohttp.ClientSession() as session:
        for _ in range(REQUESTS_PER_SEED):
            method, target, content_type, body = random_request(rng)
            headers = {"Content-Type": content_type} if content_type else {}
            url = URL(sim.url + target, encoded=True)
            async with session.request(method, url, data=body, headers=headers) as response:
                text = await response.text(errors="replace")
                check_answer(
                    method,
                    status=response.status,
                    content_type=response.headers.get("Content-Type", ""),
                    text=text,
                )
        async with session.get(sim.url + "/version") as response:
            assert response.status == 200
            assert (await response.json())["major"] == "1"
