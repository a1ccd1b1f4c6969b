"""``make tools`` (tools/build.py): a module is rebuilt only when its pins or sources change, and a
failed build names the module and its version and says how to retry."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clusters import REPO, apiserver_unavailable

BUILD = REPO / "tools" / "build.py"
HELLO = 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n'


@pytest.fixture(autouse=True)
def _go() -> None:
    if shutil.which("go") is None:
        pytest.skip("go is not installed: the tool builds cannot run")


def run(tools: Path, out: Path, *modules: str) -> subprocess.CompletedProcess[str]:
    """Run the builder as ``make tools`` does."""
    return subprocess.run(
        [sys.executable, str(BUILD), f"--tools-dir={tools}", f"--out={out}", *modules],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def module(tools: Path, name: str, *, go_mod: str, main: str) -> Path:
    """Write a Go module ``name`` under ``tools``."""
    directory = tools / name
    directory.mkdir(parents=True)
    (directory / "go.mod").write_text(go_mod)
    (directory / "main.go").write_text(main)
    return directory


def test_a_module_is_rebuilt_only_when_it_changes(tmp_path: Path) -> None:
    tools, out = tmp_path / "tools", tmp_path / "out"
    hello = module(tools, "hello", go_mod="module example.test/hello\n\ngo 1.26.0\n", main=HELLO)
    first = run(tools, out)
    assert first.returncode == 0, first.stderr
    assert "[1/1] hello: building hello" in first.stdout
    assert (
        subprocess.run([out / "bin" / "hello"], capture_output=True, text=True).stdout == "hello\n"
    )
    again = run(tools, out)
    assert "[1/1] hello: up to date (hello)" in again.stdout
    (hello / "main.go").write_text(HELLO.replace('"hello"', '"hello again"'))
    changed = run(tools, out)
    assert "[1/1] hello: building hello" in changed.stdout
    assert (
        subprocess.run([out / "bin" / "hello"], capture_output=True, text=True).stdout
        == "hello again\n"
    )


@pytest.mark.apiserver
def test_a_failed_build_names_the_module_and_version_and_how_to_retry(tmp_path: Path) -> None:
    # The etcd module's pins (its dependencies are in the cache once `make tools` ran), with a
    # call that does not compile.
    reason = apiserver_unavailable()
    if reason:
        pytest.skip(reason)
    tools, out = tmp_path / "tools", tmp_path / "out"
    broken = module(
        tools,
        "broken",
        go_mod=(REPO / "tools" / "etcd" / "go.mod")
        .read_text()
        .replace("stackflow.dev/tools/etcd", "example.test/broken"),
        main='package main\n\nimport "go.etcd.io/etcd/server/v3/etcdmain"\n\n'
        "func main() { etcdmain.NoSuchFunction() }\n",
    )
    shutil.copy(REPO / "tools" / "etcd" / "go.sum", broken / "go.sum")
    failed = run(tools, out)
    assert failed.returncode == 1
    assert f"building module {broken} (go.etcd.io/etcd/server/v3@v3.7.3) failed" in failed.stderr
    assert "NoSuchFunction" in failed.stderr
    assert "retry with: python3 tools/build.py broken" in failed.stderr
    assert not (out / "stamps" / "broken").exists()


def test_an_unknown_module_is_named(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    module(tools, "hello", go_mod="module example.test/hello\n\ngo 1.26.0\n", main=HELLO)
    answer = run(tools, tmp_path / "out", "helo")
    assert answer.returncode == 2
    assert "no module helo" in answer.stderr
    assert "(have: hello)" in answer.stderr
