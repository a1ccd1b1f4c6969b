"""The chart as the helm tier sees it: ``helm template`` with values, the objects it renders, and
the operator's view of them (its configuration file with the files the Pod would have mounted).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.clusters import CHART, helm

#: The namespace the tier renders and installs the release into.
NAMESPACE = "elastic-system"
#: The release name, as the apiserver tier installs it.
RELEASE = "stackflow"
#: Placeholder bytes of a mounted PEM file (the operator's loader only checks the PEM header).
PEM = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n"


def helm_unavailable() -> str | None:
    """Why the helm tier cannot run here, or None when it can."""
    if helm().exists():
        return None
    return f"helm tier skipped: helm is not built in {helm().parent} (run `make tools`)"


def run_helm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real helm; its completed process (the caller checks the status)."""
    return subprocess.run(
        [str(helm()), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def template(
    values: Mapping[str, Any], *, namespace: str = NAMESPACE
) -> subprocess.CompletedProcess[str]:
    """``helm template`` of the chart with ``values`` (a values file on stdin)."""
    return run_helm(
        "template",
        RELEASE,
        str(CHART),
        f"--namespace={namespace}",
        "--values=-",
        stdin=yaml.safe_dump(dict(values)),
    )


def object_key(document: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` of a rendered object (``Kind//name`` when cluster-scoped)."""
    metadata = document["metadata"]
    return f"{document['kind']}/{metadata.get('namespace', '')}/{metadata['name']}"


@dataclass(frozen=True)
class Rendered:
    """The objects one ``helm template`` rendered, by ``object_key``."""

    objects: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, values: Mapping[str, Any], *, namespace: str = NAMESPACE) -> Rendered:
        """Render the chart; an AssertionError with helm's stderr when it fails."""
        done = template(values, namespace=namespace)
        if done.returncode != 0:
            raise AssertionError(f"helm template failed: {done.stderr.strip()}")
        documents = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
        objects = {object_key(doc): doc for doc in documents}
        assert len(objects) == len(documents), (
            "two rendered objects share a kind, namespace and name"
        )
        return cls(objects)

    def one(self, kind: str) -> dict[str, Any]:
        """The only object of ``kind``."""
        found = [doc for doc in self.objects.values() if doc["kind"] == kind]
        assert len(found) == 1, f"{len(found)} objects of kind {kind}"
        return found[0]

    def container(self) -> dict[str, Any]:
        """The operator's container in the Deployment."""
        containers = self.one("Deployment")["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == ["manager"]
        return dict(containers[0])

    def config_text(self) -> str:
        """The operator's configuration file in the ConfigMap."""
        return str(self.one("ConfigMap")["data"]["operator.yaml"])


def grants(role: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The verbs a Role or ClusterRole grants, by ``group/resource`` (``/secrets`` for the core group)."""
    granted: dict[str, tuple[str, ...]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                key = f"{group}/{resource}"
                granted[key] = tuple(sorted({*granted.get(key, ()), *rule["verbs"]}))
    return granted


def _mounts(rendered: Rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each Secret volume of the Deployment with the path it is mounted at."""
    pod = rendered.one("Deployment")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    for mount in rendered.container().get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "secret" in volume:
            yield mount["mountPath"], volume["secret"]


def materialize(rendered: Rendered, root: Path) -> tuple[Path, dict[str, str]]:
    """What the operator's Pod would see, under ``root``: its configuration file (the mount paths
    it names moved under ``root``), each mounted Secret item as a PEM file there, and the
    environment its Secret references give (each value ``secret:<name>/<key>``)."""
    text = rendered.config_text()
    for mount_path, secret in _mounts(rendered):
        directory = root / mount_path.lstrip("/")
        directory.mkdir(parents=True, exist_ok=True)
        for item in secret["items"]:
            (directory / item["path"]).write_text(PEM)
        text = text.replace(f"{mount_path}/", f"{directory}/")
    environ = {}
    for variable in rendered.container().get("env", []):
        ref = (variable.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            environ[variable["name"]] = f"secret:{ref['name']}/{ref['key']}"
    path = root / "operator.yaml"
    path.write_text(text)
    return path, environ
