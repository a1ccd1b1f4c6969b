"""kubernetes_asyncio's generated classes stay unimported in the operator, and still answer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# In a fresh interpreter: this test process has imported the whole library long ago.
PROBE = textwrap.dedent(
    """
    import json, sys
    import stackflow.kube.resources, stackflow.kube.client
    from kubernetes_asyncio import config
    loaded = lambda prefix: sum(1 for name in sys.modules if name.startswith(prefix))
    before = {
        "apis": loaded("kubernetes_asyncio.client.api."),
        "models": loaded("kubernetes_asyncio.client.models."),
        "config": callable(config.load_kube_config),
    }
    from kubernetes_asyncio import client
    names = [client.ApiClient.__name__, client.Configuration.__name__]
    names += [client.CoreV1Api.__name__, client.V1Pod.__name__]
    import kubernetes_asyncio
    names.append(kubernetes_asyncio.watch.Watch.__name__)
    names.append(kubernetes_asyncio.client.models.V1Namespace.__name__)
    try:
        client.NoSuchName
    except AttributeError as error:
        names.append(str(error))
    after = {"apis": loaded("kubernetes_asyncio.client.api."), "names": names}
    print(json.dumps({"before": before, "after": after}))
    """
)


@pytest.fixture(scope="module")
def probed() -> dict[str, dict[str, object]]:
    """What a fresh interpreter that imports stackflow.kube finds, before and after."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    decoded: dict[str, dict[str, object]] = json.loads(result.stdout)
    return decoded


def test_the_operator_imports_no_generated_api_or_model(
    probed: dict[str, dict[str, object]],
) -> None:
    assert probed["before"] == {"apis": 0, "models": 0, "config": True}


def test_every_name_of_the_library_still_answers_when_asked(
    probed: dict[str, dict[str, object]],
) -> None:
    after = probed["after"]
    assert isinstance(after["apis"], int)
    assert after["apis"] > 0
    assert after["names"] == [
        "ApiClient",
        "Configuration",
        "CoreV1Api",
        "V1Pod",
        "Watch",
        "V1Namespace",
        "module 'kubernetes_asyncio.client' has no attribute 'NoSuchName'",
    ]
