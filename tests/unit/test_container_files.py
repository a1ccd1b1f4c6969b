"""Cheap checks of the container files: the Dockerfile, .dockerignore, docker-compose.yml and the
compose operator config (the container tier runs them for real, on a Docker engine)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from stackflow.config import load_config

REPO = Path(__file__).resolve().parents[2]


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments): continuations joined, comments out."""
    joined: list[str] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    return [
        (keyword.upper(), rest.strip()) for keyword, _, rest in (i.partition(" ") for i in joined)
    ]


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The instructions after the last FROM: what the shipped image is made of."""
    last_from = max(index for index, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def compose() -> dict[str, Any]:
    """docker-compose.yml, parsed."""
    document: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return document


def test_dockerfile_is_multi_stage_on_the_configurable_base() -> None:
    steps = instructions(REPO / "Dockerfile")
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.12-slim-bookworm")
    froms = [arguments for keyword, arguments in steps if keyword == "FROM"]
    assert froms == ["${BASE_IMAGE} AS builder", "${BASE_IMAGE}"]


def test_entrypoint_is_exec_form_and_runs_as_non_root() -> None:
    final = final_stage(instructions(REPO / "Dockerfile"))
    by_keyword = dict(final)
    # JSON arrays: no shell in between, the operator is PID 1 and receives SIGTERM itself.
    assert json.loads(by_keyword["ENTRYPOINT"]) == ["stackflow"]
    assert json.loads(by_keyword["CMD"]) == ["run", "--config", "/etc/stackflow/operator.yaml"]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users[-1].split(":")[0] == "10001"
    env = " ".join(arguments for keyword, arguments in final if keyword == "ENV")
    for setting in ("PYTHONDONTWRITEBYTECODE=1", "HOME=/tmp", "TMPDIR=/tmp"):
        assert setting in env


def test_final_stage_has_no_pip_settings_build_tools_or_sources() -> None:
    final = final_stage(instructions(REPO / "Dockerfile"))
    copies = [arguments for keyword, arguments in final if keyword in ("COPY", "ADD")]
    assert copies, "the final stage copies the venv"
    for arguments in copies:
        assert "build-confi" not in arguments
        assert "pip.conf" not in arguments
        assert ".crt" not in arguments
    runs = " ".join(arguments for keyword, arguments in final if keyword == "RUN")
    for tool in ("pip install", "apt-get", "gcc", "build-essential"):
        assert tool not in runs
    assert "--from=builder /opt/stackflow /opt/stackflow" in " ".join(copies)


def test_dockerfile_labels_the_image() -> None:
    labels = " ".join(
        arguments for keyword, arguments in instructions(REPO / "Dockerfile") if keyword == "LABEL"
    )
    for key in ("version", "title", "source", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels
    assert 'org.opencontainers.image.version="${VERSION}"' in labels


def test_dockerignore_keeps_environments_and_caches_out() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".venv", ".tools", ".git", "test-artifacts", "**/__pycache__"} <= ignored


def test_compose_services_use_the_image_variables() -> None:
    services = compose()["services"]
    assert set(services) == {"temporal", "kubesim", "operator"}
    assert services["temporal"]["image"].startswith("${TEMPORAL_IMAGE:-")
    assert services["kubesim"]["image"] == "${STACKFLOW_IMAGE:-stackflow:latest}"
    assert services["operator"]["image"] == "${STACKFLOW_IMAGE:-stackflow:latest}"
    assert services["kubesim"]["entrypoint"] == ["kubesim"]
    assert "--db-filename=/data/temporal.db" in services["temporal"]["command"]
    assert "temporal-data:/data" in services["temporal"]["volumes"]


def test_compose_services_are_health_checked_on_the_host_network() -> None:
    services = compose()["services"]
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        assert service["healthcheck"]["test"][0] == "CMD", name
    depends_on = services["operator"]["depends_on"]
    assert depends_on == {
        "temporal": {"condition": "service_healthy"},
        "kubesim": {"condition": "service_healthy"},
    }
    assert (
        "./deploy/compose/operator.yaml:/etc/stackflow/operator.yaml:ro"
        in (services["operator"]["volumes"])
    )


def test_container_files_dial_only_localhost() -> None:
    for name in ("Dockerfile", "docker-compose.yml", "deploy/compose/operator.yaml"):
        text = (REPO / name).read_text()
        for host in re.findall(r"\w+://([^/:'\"\s]+)", text):
            assert host in ("127.0.0.1", "localhost"), f"{name} names {host}"


def test_compose_operator_config_is_valid() -> None:
    config = load_config(REPO / "deploy/compose/operator.yaml", {})
    assert config.temporal_address == "127.0.0.1:7233"
    assert config.enable_leader_election
