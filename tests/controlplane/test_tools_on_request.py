"""``make go-tools`` leaves ECK's operator out (``make eck`` and ``make tools`` name it), and a
module's ``binary`` file names the binary its one tool makes (ECK's package is ``.../cmd``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clusters import REPO
from tests.controlplane.test_tools_build import BUILD, HELLO, module, run


def hello_module(tools: Path, name: str) -> Path:
    """A one-file Go module ``name`` under ``tools`` that prints hello."""
    return module(tools, name, go_mod=f"module example.test/{name}\n\ngo 1.26.0\n", main=HELLO)


def test_eck_is_built_only_when_named_and_under_its_binary_name(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.skip("go is not installed: the tool builds cannot run")
    tools, out = tmp_path / "tools", tmp_path / "out"
    hello_module(tools, "hello")
    (hello_module(tools, "eck") / "binary").write_text("elastic-operator\n")
    default = run(tools, out)
    assert default.returncode == 0, default.stderr
    assert "[1/1] hello: building hello" in default.stdout
    assert not (out / "bin" / "elastic-operator").exists()
    named = run(tools, out, "eck")
    assert named.returncode == 0, named.stderr
    assert "[1/1] eck: building elastic-operator" in named.stdout
    done = subprocess.run([out / "bin" / "elastic-operator"], capture_output=True, text=True)
    assert done.stdout == "hello\n"


def test_without_go_the_build_says_so_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BUILD), "eck"],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "tools: skipping eck: go is not installed (the apiserver and parity tiers need Go 1.26"
        " and the Go module proxy)"
    ]


def test_the_eck_module_keeps_ecks_replace_lines() -> None:
    go_mod = (REPO / "tools" / "eck" / "go.mod").read_text()
    assert "tool github.com/elastic/cloud-on-k8s/v3/cmd" in go_mod
    assert "github.com/elastic/cloud-on-k8s/v3 v3.5.0" in go_mod
    assert "github.com/dgryski/go-gk =>" in go_mod
    assert "github.com/dgryski/go-lttb =>" in go_mod
    assert (REPO / "tools" / "eck" / "binary").read_text().strip() == "elastic-operator"
