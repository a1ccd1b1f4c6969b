"""The operator's command line imports with no pydantic plugin search, unless told otherwise."""

from __future__ import annotations

import os

import pytest

from stackflow.cli import main
from stackflow.cli.imports import PYDANTIC_PLUGINS_VARIABLE, without_pydantic_plugins


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param({}, {PYDANTIC_PLUGINS_VARIABLE: "__all__"}, id="unset-then-none-searched"),
        pytest.param(
            {PYDANTIC_PLUGINS_VARIABLE: "logfire"},
            {PYDANTIC_PLUGINS_VARIABLE: "logfire"},
            id="the-environment-wins",
        ),
        pytest.param(
            {PYDANTIC_PLUGINS_VARIABLE: ""}, {PYDANTIC_PLUGINS_VARIABLE: ""}, id="even-empty"
        ),
    ],
)
def test_without_pydantic_plugins(before: dict[str, str], after: dict[str, str]) -> None:
    environ = dict(before)
    without_pydantic_plugins(environ)
    assert environ == after


def test_a_command_runs_without_the_plugin_search(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Set, then removed: the monkeypatch puts back whatever was there before the test.
    monkeypatch.setenv(PYDANTIC_PLUGINS_VARIABLE, "before")
    monkeypatch.delenv(PYDANTIC_PLUGINS_VARIABLE)
    assert main(["no-such-command"]) == 2
    assert os.environ[PYDANTIC_PLUGINS_VARIABLE] == "__all__"
    assert "unknown command 'no-such-command'" in capsys.readouterr().err
