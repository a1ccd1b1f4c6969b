# Stackflow's operator image (also runs kubesim: `--entrypoint kubesim`).
#
# Build with `make image` (tools/image.py): it passes VERSION (from pyproject.toml), picks a base
# that can actually be had (BASE_IMAGE, or a local Debian bookworm base it builds once) and hands
# pip the machine's CA bundle and index settings through a throwaway build context, in the
# builder stage only. A plain `docker build .` works too where the default base and the package
# index can be reached directly.
ARG BASE_IMAGE=python:3.12-slim-bookworm

# ---- builder: a venv with the package installed (non-editable) from the sources -------------
FROM ${BASE_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_PROGRESS_BAR=off \
    PYTHONDONTWRITEBYTECODE=1
# build-confi[g] matches nothing in the repository (a plain build gets no pip settings); in the
# throwaway context tools/image.py makes it holds pip.conf and the CA bundle. This stage is never
# shipped: only the venv is copied into the final stage.
COPY pyproject.toml README.md build-confi[g] /build/
WORKDIR /build
RUN if [ -f /build/pip.conf ]; then export PIP_CONFIG_FILE=/build/pip.conf; fi \
    && if [ -f /build/ca-certificates.crt ]; then export PIP_CERT=/build/ca-certificates.crt; fi \
    && python3 -m venv /opt/stackflow \
    && /opt/stackflow/bin/python -m pip install --quiet --upgrade pip
COPY stackflow/ /build/stackflow/
COPY workflows/ /build/workflows/
COPY activities/ /build/activities/
COPY watchers/ /build/watchers/
COPY kubesim/ /build/kubesim/
COPY controlplane/ /build/controlplane/
RUN if [ -f /build/pip.conf ]; then export PIP_CONFIG_FILE=/build/pip.conf; fi \
    && if [ -f /build/ca-certificates.crt ]; then export PIP_CERT=/build/ca-certificates.crt; fi \
    && /opt/stackflow/bin/python -m pip install --quiet --no-compile /build \
    # Byte-compile once here: the final root filesystem is read-only, nothing can cache later.
    && /opt/stackflow/bin/python -m compileall -q -j 0 /opt/stackflow/lib \
    # The CRDs kubesim loads (`kubesim --crds /usr/share/stackflow/crds`), from this very version.
    && mkdir -p /opt/stackflow/share/crds \
    && /opt/stackflow/bin/stackflow crds --out-dir /opt/stackflow/share/crds \
    # pip (and setuptools, which a 3.11 venv seeds) are build tools: the image installs nothing.
    && /opt/stackflow/bin/python -m pip uninstall --quiet --yes pip setuptools

# ---- final: the venv on a bare base, run as a non-root user ---------------------------------
FROM ${BASE_IMAGE}
ARG VERSION=0+unknown
ARG SOURCE_URL=""
LABEL org.opencontainers.image.title="stackflow" \
      org.opencontainers.image.description="A Kubernetes operator for the Elastic Stack (ECK's custom resources), orchestrated by Temporal." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      # pyproject.toml declares no license; SPDX's word for "not stated" rather than a guess.
      org.opencontainers.image.licenses="NOASSERTION"
# uid 10001: outside the range of any host's ordinary users. Its home is /tmp, the one writable
# place under a read-only root filesystem (mount a tmpfs there).
RUN groupadd --gid 10001 stackflow \
    && useradd --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin stackflow \
    # Named volumes mounted here start with this ownership (kubesim's kubeconfig and state).
    && mkdir -p /var/lib/stackflow /etc/stackflow \
    && chown 10001:10001 /var/lib/stackflow
COPY --from=builder /opt/stackflow /opt/stackflow
COPY deploy/compose/operator.yaml /etc/stackflow/operator.yaml
ENV PATH=/opt/stackflow/bin:${PATH} \
    HOME=/tmp \
    TMPDIR=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
WORKDIR /tmp
# Probes and metrics (see `stackflow run --help`).
EXPOSE 8081
# Exec form: the operator is PID 1 and gets SIGTERM itself (it releases its Lease and exits 0).
ENTRYPOINT ["stackflow"]
CMD ["run", "--config", "/etc/stackflow/operator.yaml"]
