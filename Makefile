# Stackflow — every target creates or refreshes .venv from pyproject.toml when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test lint bench fmt clean venv tools go-tools eck elasticsearch test-apiserver test-reliability proto

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> installing Stackflow and its dev dependencies into $(VENV)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet --progress-bar off -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# The benchmarks also compare with kopf (the bench extra), which the operator never needs.
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	@echo "==> installing the benchmark extra (kopf) into $(VENV)"
	@$(BIN)/python -m pip install --quiet --progress-bar off -e '.[dev,bench]'
	@touch $(BENCH_STAMP)

# kubesim's Kubernetes protobuf classes (.tools/kubeproto, git-ignored), generated from the
# k8s.io/api .proto files Go fetches; rebuilt only when the generator (and its version pin) changes.
PROTO_STAMP := .tools/kubeproto/.stamp
$(PROTO_STAMP): kubesim/proto_build.py kubesim/proto_json.py $(STAMP)
	@if command -v go >/dev/null 2>&1; then \
		echo "==> generating kubesim's protobuf classes into .tools/kubeproto"; \
		$(BIN)/python -m kubesim.proto_build; \
	else \
		echo "==> skipping kubesim's protobuf classes: go is not on PATH (kubesim will refuse protobuf bodies)"; \
	fi

proto: $(PROTO_STAMP)

# `make dev CLUSTER=apiserver` runs it on the real control plane (built first by `make go-tools`).
# `make dev ES=real` runs every Elasticsearch Pod as a real node (the distributions come first).
CLUSTER ?= kubesim
ES ?= simulated
dev: $(STAMP) proto $(if $(filter apiserver,$(CLUSTER)),go-tools) $(if $(filter real,$(ES)),elasticsearch)
	$(BIN)/stackflow dev --cluster $(CLUSTER) --elasticsearch $(ES)

test: $(STAMP) proto
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(BENCH_STAMP)
	@for b in bench/[!_]*_bench.py; do echo "==> $$b"; $(BIN)/python $$b || exit 1; done

# The real control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok) and
# helm, built from the Go modules under tools/ into .tools/bin; only what a pin change made stale.
go-tools:
	@python3 tools/build.py

# ECK's operator (tools/eck: ECK 3.5.0) into .tools/bin/elastic-operator, for the parity tier
# (tests/parity); about 4 minutes, so `make go-tools` (CI's) leaves it out.
eck:
	@python3 tools/build.py eck

# The Elasticsearch distributions pinned in tools/elasticsearch/versions.txt, fetched with mvn and
# unpacked into .tools/elasticsearch/<version>; only what a pin change made stale.
elasticsearch:
	@python3 tools/elasticsearch.py

# All three; each runs even when another fails (no go, no mvn), and the target fails if one did.
tools:
	@status=0; \
	$(MAKE) --no-print-directory go-tools || status=1; \
	$(MAKE) --no-print-directory eck || status=1; \
	$(MAKE) --no-print-directory elasticsearch || status=1; \
	exit $$status

# The end-to-end scenarios and the conformance comparison on the real control plane only.
test-apiserver: go-tools $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m apiserver -rs $(PYTEST_ARGS)

# The fault-injection suite under load alone (it also runs in `make test`), its figures printed;
# STACKFLOW_RELIABILITY_SEED=N replays a run's schedule. bench/reliability_bench.py is the long one.
test-reliability: $(STAMP) proto
	$(BIN)/python -m pytest -q -p no:cacheprovider -m reliability -s $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

.PHONY: image docker-stop

# The container image stackflow:<version> (+ :latest), built by tools/image.py on the Docker engine
# that answers, or on a private dockerd under .tools/docker that it starts when root.
image:
	@python3 tools/image.py build

# Stops that private dockerd (a no-op when none runs).
docker-stop:
	@python3 tools/image.py stop
