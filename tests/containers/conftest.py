"""The container tier's session: a Docker engine, the Stackflow image and a local Temporal image.

The engine is the one that answers (DOCKER_HOST, /var/run/docker.sock, the private one under
.tools/docker); when none does and we are root, the private dockerd is started here (and stopped
at the end of the session); otherwise every test of the tier is skipped with one line saying why.
Temporal's published images cannot be pulled here, so a local one is built from our own base and
the venv's ``temporal`` binary; the compose test swaps it in through TEMPORAL_IMAGE.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.containers.docker import REPO, Docker, load_image_tool

TEMPORAL_BINARY = Path(sys.executable).parent / "temporal"
TEMPORAL_TEST_IMAGE = "stackflow-test-temporal"
BINARY_DIGEST_LABEL = "dev.stackflow.temporal-image-sha256"
TEMPORAL_DOCKERFILE = """\
FROM {base}
USER root
COPY temporal /usr/local/bin/temporal
# A fresh named volume on /data takes this ownership: the dev server's SQLite file.
RUN mkdir -p /data && chown 10001:10001 /data
USER 10001:10001
# The server's resource detection asks for the user name; without cgo only $USER answers.
ENV HOME=/tmp USER=temporal
ENTRYPOINT ["temporal"]
CMD []
"""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/containers carries the ``container`` marker."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.container)


@pytest.fixture(scope="session")
def docker() -> Iterator[Docker]:
    """The Docker engine of the session (skips the tier with the reason when there is none)."""
    if shutil.which("docker") is None:
        pytest.skip(
            "container tier: no docker client on PATH (install the Debian Docker engine package)"
        )
    tool = load_image_tool()
    try:
        host = tool.find_engine(start_private=False)
        started_here = False
    except tool.ImageError as error:
        if os.geteuid() != 0 or shutil.which("dockerd") is None:
            pytest.skip(f"container tier: {error}")
        try:
            tool.start_private_dockerd()
        except tool.ImageError as start_error:
            pytest.skip(f"container tier: cannot start the private dockerd: {start_error}")
        host, started_here = tool.PRIVATE_HOST, True
    engine = Docker(host)
    try:
        yield engine
    finally:
        engine.cleanup()
        if started_here:
            tool.stop_private_dockerd()


@pytest.fixture(scope="session")
def stackflow_image(docker: Docker) -> str:
    """``stackflow:<version>``, built (or found up to date) by tools/image.py."""
    built = subprocess.run(
        [sys.executable, str(REPO / "tools/image.py"), "build"],
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_HOST": docker.host},
        timeout=1800,
        check=False,
    )
    if built.returncode != 0:
        pytest.fail(f"make image failed: {built.stderr.strip().splitlines()[-1:]}")
    return built.stdout.strip()


@pytest.fixture(scope="session")
def temporal_image(docker: Docker, stackflow_image: str) -> str:
    """A Temporal CLI image (entrypoint ``temporal``, writable /data) from our own base."""
    if not TEMPORAL_BINARY.is_file():
        pytest.skip(f"container tier: no Temporal CLI at {TEMPORAL_BINARY} (make venv)")
    tool = load_image_tool()
    # Our own Debian base when tools/image.py made one, else the image just built on its base.
    base = tool.LOCAL_BASE_IMAGE
    if docker.run("image", "inspect", base, check=False).returncode != 0:
        base = stackflow_image
    dockerfile = TEMPORAL_DOCKERFILE.format(base=base)
    digest = hashlib.sha256(TEMPORAL_BINARY.read_bytes() + dockerfile.encode()).hexdigest()
    reference = f"{TEMPORAL_TEST_IMAGE}:{digest[:12]}"
    found = docker.run(
        "image",
        "inspect",
        "--format",
        f'{{{{index .Config.Labels "{BINARY_DIGEST_LABEL}"}}}}',
        reference,
        check=False,
    )
    if found.returncode == 0 and found.stdout.strip() == digest:
        return reference
    with tempfile.TemporaryDirectory(prefix="temporal-image-") as context:
        shutil.copy2(TEMPORAL_BINARY, Path(context) / "temporal")
        (Path(context) / "Dockerfile").write_text(dockerfile)
        docker.run(
            "build",
            "--network=host",
            "--rm",
            "--force-rm",
            f"--label={BINARY_DIGEST_LABEL}={digest}",
            f"--tag={reference}",
            context,
            timeout=900,
        )
    # vfs keeps each image in full: drop the test images of earlier binaries or recipes.
    tags = docker.run("images", TEMPORAL_TEST_IMAGE, "--format", "{{.Tag}}").stdout.split()
    for stale in {f"{TEMPORAL_TEST_IMAGE}:{tag}" for tag in tags} - {reference}:
        docker.run("rmi", stale, check=False)
    return reference
