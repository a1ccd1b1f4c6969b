"""esrunner.distributions finds the Elasticsearch distributions ``make tools`` unpacks and a Java
for each; tools/elasticsearch.py fetches and unpacks them (here from zips made by the tests, with a
stand-in mvn: no network)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import textwrap
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from esrunner import distributions
from esrunner.distributions import (
    Distribution,
    DistributionUnavailable,
    distribution,
    find_java,
    installed_versions,
    java_major,
    parse_version,
    pinned_versions,
    unavailable_reason,
)

REPO = Path(__file__).resolve().parents[2]


def _load_fetcher() -> ModuleType:
    """tools/elasticsearch.py, which is a script, not a package module."""
    spec = importlib.util.spec_from_file_location(
        "tools_elasticsearch", REPO / "tools" / "elasticsearch.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fetcher = _load_fetcher()


@pytest.fixture(autouse=True)
def _no_java_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own Java choices do not leak into the tests."""
    for variable in ("STACKFLOW_JAVA_HOME_8", "STACKFLOW_JAVA_HOME_9", "JAVA_HOME"):
        monkeypatch.delenv(variable, raising=False)


# --- versions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("8.17.0", (8, 17, 0)),
        ("9.1.0", (9, 1, 0)),
        ("10.0.12", (10, 0, 12)),
        (" 8.18.0\n", (8, 18, 0)),
    ],
)
def test_a_version_parses_into_numbers(text: str, parsed: tuple[int, int, int]) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize("text", ["8.17", "8.17.0.1", "v8.17.0", "8.x.0", "9.0.0-beta1", ""])
def test_anything_else_is_not_a_version(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not an Elasticsearch version like 8\.17\.0"):
        parse_version(text)


def test_versions_sort_by_number_not_text() -> None:
    assert sorted(["9.1.0", "8.17.0", "8.9.0", "10.0.0"], key=parse_version) == [
        "8.9.0",
        "8.17.0",
        "9.1.0",
        "10.0.0",
    ]


def test_the_pins_are_the_supported_versions_and_both_readers_agree() -> None:
    assert pinned_versions() == ["8.17.0", "8.18.0", "9.1.0"]
    assert fetcher.read_versions(fetcher.VERSIONS) == pinned_versions()
    assert fetcher.STAMP == distributions.STAMP


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("8.17.0\n8.17\n", r"versions.txt:2: '8.17' is not a version"),
        ("8.17.0\n# again\n8.17.0\n", r"versions.txt:3: 8.17.0 is pinned twice"),
    ],
)
def test_a_bad_pin_file_names_the_line(tmp_path: Path, content: str, message: str) -> None:
    pins = tmp_path / "versions.txt"
    pins.write_text(content)
    with pytest.raises(ValueError, match=message):
        fetcher.read_versions(pins)


# --- Java --------------------------------------------------------------------------------------


def jdk(parent: Path, name: str, java_version: str | None) -> Path:
    """A fake JDK home: an executable ``bin/java`` and, unless None, a ``release`` file."""
    home = parent / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\nexit 1\n")
    java.chmod(0o755)
    if java_version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{java_version}"\n')
    return home


@pytest.mark.parametrize(
    ("release", "major"),
    [("17.0.15", 17), ("21", 21), ("25.0.3", 25), ("1.8.0_392", 8), ("garbage", None)],
)
def test_the_java_major_is_read_from_the_release_file(
    tmp_path: Path, release: str, major: int | None
) -> None:
    assert java_major(jdk(tmp_path, "jdk", release)) == major


def test_a_directory_without_bin_java_is_not_a_jdk(tmp_path: Path) -> None:
    (tmp_path / "openjdk-17").mkdir()
    (tmp_path / "openjdk-17" / "release").write_text('JAVA_VERSION="17.0.15"\n')
    assert java_major(tmp_path / "openjdk-17") is None


@pytest.mark.parametrize(
    ("majors", "version", "chosen"),
    [
        # 8.x: 17 to 24, the oldest preferred; 9.x: 21 and newer, the newest preferred.
        ((17, 21, 25), "8.17.0", 17),
        ((17, 21, 25), "8.18.0", 17),
        ((17, 21, 25), "9.1.0", 25),
        ((21, 24), "8.17.0", 21),
        ((17, 21), "9.1.0", 21),
        ((25,), "8.17.0", None),
        ((17,), "9.1.0", None),
        ((11, 17, 25), "7.17.0", None),
        ((), "9.1.0", None),
    ],
)
def test_the_java_chosen_for_a_version(
    tmp_path: Path, majors: tuple[int, ...], version: str, chosen: int | None
) -> None:
    homes = {major: jdk(tmp_path, f"jdk-{major}", f"{major}.0.1") for major in majors}
    found = find_java(version, homes.values())
    assert found == (homes[chosen] if chosen is not None else None)


def test_the_first_home_of_the_preferred_major_wins(tmp_path: Path) -> None:
    first, second = jdk(tmp_path, "a-17", "17.0.1"), jdk(tmp_path, "b-17", "17.0.9")
    assert find_java("8.17.0", [second, first]) == second


def test_the_java_homes_are_found_under_the_jvm_dirs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jvm = tmp_path / "jvm"
    real = jdk(jvm, "java-17-openjdk-amd64", "17.0.15")
    (jvm / "java-1.17.0-openjdk-amd64").symlink_to(real)
    (jvm / "openjdk-17").mkdir()  # no bin/java
    newest = jdk(tmp_path / "elsewhere", "temurin-25", "25.0.3")
    monkeypatch.setattr(distributions, "JVM_DIRS", (jvm,))
    monkeypatch.setenv("JAVA_HOME", str(newest))
    assert distributions.java_homes() == [newest, real]
    assert find_java("8.17.0") == real
    assert find_java("9.1.0") == newest


def test_a_java_home_variable_chooses_the_java(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seventeen, twenty_one = jdk(tmp_path, "17", "17.0.1"), jdk(tmp_path, "21", "21.0.1")
    monkeypatch.setenv("STACKFLOW_JAVA_HOME_8", str(twenty_one))
    assert find_java("8.17.0", [seventeen, twenty_one]) == twenty_one
    monkeypatch.setenv("STACKFLOW_JAVA_HOME_9", str(seventeen))
    assert find_java("9.1.0", [seventeen, twenty_one]) is None


# --- distributions and their messages ----------------------------------------------------------


def unpacked(root: Path, version: str, *, stamp: bool = True) -> Path:
    """A fake unpacked distribution (complete when stamped)."""
    home = root / version
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "elasticsearch").write_text("#!/bin/sh\n")
    if stamp:
        (home / distributions.STAMP).write_text(fetcher.fingerprint(version) + "\n")
    return home


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with Java 17 and 25 under its JVM dir; the distributions' root is returned."""
    jvm = tmp_path / "jvm"
    jdk(jvm, "java-17", "17.0.15")
    jdk(jvm, "temurin-25", "25.0.3")
    monkeypatch.setattr(distributions, "JVM_DIRS", (jvm,))
    root = tmp_path / "elasticsearch"
    root.mkdir()
    return root


def test_only_complete_versions_are_installed_oldest_first(machine: Path) -> None:
    unpacked(machine, "9.1.0")
    unpacked(machine, "8.17.0")
    unpacked(machine, "8.18.0", stamp=False)  # an unpacking cut short
    (machine / "notes").mkdir()
    assert installed_versions(machine) == ["8.17.0", "9.1.0"]
    assert installed_versions(machine / "absent") == []


def test_the_root_can_be_set_by_the_environment(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unpacked(machine, "9.1.0")
    monkeypatch.setenv("STACKFLOW_ELASTICSEARCH_DIR", str(machine))
    assert distributions.default_root() == machine
    assert installed_versions() == ["9.1.0"]
    monkeypatch.delenv("STACKFLOW_ELASTICSEARCH_DIR")
    assert (
        distributions.default_root()
        == distributions.DEFAULT_ROOT
        == REPO / ".tools" / ("elasticsearch")
    )


def test_a_distribution_comes_with_its_java(machine: Path) -> None:
    home = unpacked(machine, "8.17.0")
    unpacked(machine, "9.1.0")
    jvm = distributions.JVM_DIRS[0]
    found = distribution("8.17.0", machine)
    assert found == Distribution(version="8.17.0", home=home, java_home=jvm / "java-17")
    assert found.executable == home / "bin" / "elasticsearch"
    assert found.environment() == {"ES_JAVA_HOME": str(jvm / "java-17")}
    assert distribution("9.1.0", machine).java_home == jvm / "temurin-25"
    assert unavailable_reason("8.17.0", root=machine) is None
    assert unavailable_reason(root=machine) is None


def test_a_version_not_installed_names_the_installed_ones(machine: Path) -> None:
    unpacked(machine, "8.17.0")
    unpacked(machine, "9.1.0")
    message = (
        f"Elasticsearch 8.18.0 is not installed in {machine} (installed: 8.17.0, 9.1.0); "
        "`make tools` fetches the pinned ones (8.17.0, 8.18.0, 9.1.0)"
    )
    with pytest.raises(DistributionUnavailable) as raised:
        distribution("8.18.0", machine)
    assert str(raised.value) == message
    assert unavailable_reason("8.18.0", root=machine) == message


def test_a_version_not_pinned_says_where_to_pin_it(machine: Path) -> None:
    with pytest.raises(DistributionUnavailable) as raised:
        distribution("8.19.0", machine)
    assert str(raised.value) == (
        f"Elasticsearch 8.19.0 is not installed in {machine} (installed: none); it is not "
        f"pinned in {distributions.PINNED}: add it there, then `make tools` fetches it"
    )


def test_nothing_installed_is_one_skip_reason(machine: Path) -> None:
    assert unavailable_reason(root=machine) == (
        f"no Elasticsearch distribution in {machine}: `make tools` fetches them with mvn"
    )


def test_no_suitable_java_says_which_is_needed(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jvm = machine.parent / "only-25"
    newest = jdk(jvm, "temurin-25", "25.0.3")
    monkeypatch.setattr(distributions, "JVM_DIRS", (jvm,))
    unpacked(machine, "8.17.0")
    message = (
        "no Java for Elasticsearch 8.17.0: it needs Java 17 to 24 and there is Java 25 in "
        f"{newest}; install one, or set STACKFLOW_JAVA_HOME_8 to a JDK home"
    )
    with pytest.raises(DistributionUnavailable) as raised:
        distribution("8.17.0", machine)
    assert str(raised.value) == message
    # No version asked for: the newest installed that cannot run says why.
    assert unavailable_reason(root=machine) == message
    unpacked(machine, "9.1.0")
    assert unavailable_reason(root=machine) is None


def test_a_java_home_variable_that_does_not_fit_is_named(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unpacked(machine, "9.1.0")
    seventeen = distributions.JVM_DIRS[0] / "java-17"
    monkeypatch.setenv("STACKFLOW_JAVA_HOME_9", str(seventeen))
    assert unavailable_reason("9.1.0", root=machine) == (
        "no Java for Elasticsearch 9.1.0: it needs Java 21 or newer, and "
        f"STACKFLOW_JAVA_HOME_9={seventeen} is Java 17"
    )
    monkeypatch.setenv("STACKFLOW_JAVA_HOME_9", str(machine))
    assert unavailable_reason("9.1.0", root=machine) == (
        "no Java for Elasticsearch 9.1.0: it needs Java 21 or newer, and "
        f"STACKFLOW_JAVA_HOME_9={machine} is not a JDK home"
    )


# --- tools/elasticsearch.py: unpacking, stamps, fetching ----------------------------------------


def distribution_zip(path: Path, version: str, *, top: str | None = None) -> Path:
    """A tiny stand-in for the distribution zip: one top directory with bin/, config/, lib/."""
    top = top or f"elasticsearch-{version}"
    entries = [
        (f"{top}/", 0o40755, b""),
        (f"{top}/bin/", 0o40755, b""),
        (f"{top}/bin/elasticsearch", 0o100755, b"#!/bin/sh\necho " + version.encode() + b"\n"),
        (f"{top}/bin/elasticsearch.bat", 0o100644, b"rem\r\n"),
        (f"{top}/config/elasticsearch.yml", 0o100644, b"# settings\n"),
        (f"{top}/lib/elasticsearch-{version}.jar", 0o100644, b"PK"),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zipped:
        for name, mode, data in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.create_system = 3
            zipped.writestr(info, data)
    return path


def test_unpacking_keeps_the_modes_and_drops_the_top_directory(tmp_path: Path) -> None:
    archive = distribution_zip(tmp_path / "es.zip", "8.17.0")
    home = fetcher.install(archive, tmp_path / "root", "8.17.0")
    assert home == tmp_path / "root" / "8.17.0"
    assert sorted(path.name for path in home.iterdir()) == [
        ".stamp",
        "bin",
        "config",
        "data",
        "lib",
        "logs",
    ]
    assert os.access(home / "bin" / "elasticsearch", os.X_OK)
    assert stat.S_IMODE((home / "bin" / "elasticsearch").stat().st_mode) == 0o755
    assert stat.S_IMODE((home / "bin" / "elasticsearch.bat").stat().st_mode) == 0o644
    assert (home / "config" / "elasticsearch.yml").read_text() == "# settings\n"
    assert fetcher.up_to_date(home, "8.17.0")
    assert not fetcher.up_to_date(home, "8.18.0")
    assert installed_versions(tmp_path / "root") == ["8.17.0"]
    assert not list((tmp_path / "root").glob(".*.partial"))


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["a/bin/elasticsearch", "b/README"], "holds 2 top-level entries, not one directory"),
        (["README"], "its top-level entry README is a file"),
        (["top/../../escape"], "points outside the archive"),
        (["top/lib/x.jar"], "has no bin/elasticsearch: not an Elasticsearch distribution"),
    ],
)
def test_an_archive_that_is_not_one_distribution_is_refused(
    tmp_path: Path, names: list[str], message: str
) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in names:
            zipped.writestr(name, b"x")
    with pytest.raises(fetcher.UnpackError, match=message):
        fetcher.install(archive, tmp_path / "root", "8.17.0")
    assert not (tmp_path / "root" / "8.17.0").exists()
    assert not (tmp_path / "escape").exists()
    assert not list((tmp_path / "root").glob(".*"))


def test_a_stamp_of_another_pin_is_stale(tmp_path: Path) -> None:
    home = fetcher.install(distribution_zip(tmp_path / "es.zip", "9.1.0"), tmp_path, "9.1.0")
    (home / fetcher.STAMP).write_text("org.example:elasticsearch:9.1.0:zip layout=0\n")
    assert not fetcher.up_to_date(home, "9.1.0")
    (home / fetcher.STAMP).unlink()
    assert not fetcher.up_to_date(home, "9.1.0")


class Setup:
    """A pin file, a local Maven repository and an output directory under ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.pins = tmp_path / "versions.txt"
        self.repository = tmp_path / "m2"
        self.out = tmp_path / "out"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()

    def pin(self, *versions: str) -> None:
        """Pin these versions."""
        self.pins.write_text("# pins\n" + "".join(f"{version}\n" for version in versions))

    def in_repository(self, version: str) -> Path:
        """Put the version's zip where mvn would."""
        return distribution_zip(fetcher.maven_zip(self.repository, version), version)

    def run(self, *args: str) -> int:
        """tools/elasticsearch.py on these places."""
        code: int = fetcher.main(
            [
                f"--versions-file={self.pins}",
                f"--out={self.out}",
                f"--maven-repo={self.repository}",
                *args,
            ]
        )
        return code


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    """No mvn on PATH unless a test puts its stand-in there."""
    places = Setup(tmp_path)
    monkeypatch.setenv("PATH", str(places.bin))
    return places


def test_a_version_is_unpacked_again_only_when_its_pin_changes(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    setup.pin("8.17.0", "9.1.0")
    setup.in_repository("8.17.0")
    setup.in_repository("9.1.0")
    assert setup.run() == 0
    out = capsys.readouterr().out
    root = setup.out / "elasticsearch"
    assert f"[1/2] elasticsearch 8.17.0: unpacked into {root / '8.17.0'}" in out
    assert f"[2/2] elasticsearch 9.1.0: unpacked into {root / '9.1.0'}" in out
    assert f"elasticsearch: 2 distribution(s) ready in {root}" in out
    assert (root / "8.17.0" / "data").is_dir()
    assert (root / "8.17.0" / "logs").is_dir()

    assert setup.run() == 0
    out = capsys.readouterr().out
    assert f"[1/2] elasticsearch 8.17.0: up to date ({root / '8.17.0'})" in out
    assert f"[2/2] elasticsearch 9.1.0: up to date ({root / '9.1.0'})" in out

    setup.pin("8.18.0", "9.1.0")
    setup.in_repository("8.18.0")
    assert setup.run() == 0
    out = capsys.readouterr().out
    assert "elasticsearch 8.17.0: removed (no longer pinned)" in out
    assert "[1/2] elasticsearch 8.18.0: unpacked into" in out
    assert "[2/2] elasticsearch 9.1.0: up to date" in out
    assert installed_versions(root) == ["8.18.0", "9.1.0"]

    newest = root / "9.1.0"
    (newest / fetcher.STAMP).unlink()
    assert setup.run("9.1.0") == 0
    assert "[1/1] elasticsearch 9.1.0: unpacked into" in capsys.readouterr().out
    assert setup.run("--force") == 0
    assert capsys.readouterr().out.count(": unpacked into") == 2


def test_a_missing_version_is_fetched_with_mvn(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stand-in mvn that "fetches" by copying a zip made here where Maven would put it.
    source = distribution_zip(tmp_path / "source.zip", "9.1.0")
    calls = tmp_path / "calls"
    mvn = setup.bin / "mvn"
    mvn.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import shutil, sys
            from pathlib import Path
            args = dict(arg[2:].split("=", 1) for arg in sys.argv[1:] if arg.startswith("-D"))
            group, artifact, version, kind = args["artifact"].split(":")
            with open({str(calls)!r}, "a") as calls:
                calls.write(" ".join(sys.argv[1:]) + "\\n")
            target = Path(args["maven.repo.local"], *group.split("."), artifact, version)
            target.mkdir(parents=True)
            shutil.copy({str(source)!r}, target / f"{{artifact}}-{{version}}.{{kind}}")
            """
        )
    )
    mvn.chmod(0o755)
    setup.pin("9.1.0")
    assert setup.run() == 0
    out = capsys.readouterr().out
    log = setup.out / "logs" / "elasticsearch-9.1.0.log"
    assert (
        "[1/1] elasticsearch 9.1.0: fetching "
        f"org.elasticsearch.distribution.integ-test-zip:elasticsearch:9.1.0:zip with mvn (log: {log})"
    ) in out
    assert "[1/1] elasticsearch 9.1.0: fetched in" in out
    assert "[1/1] elasticsearch 9.1.0: unpacked into" in out
    assert "dependency:get" in calls.read_text()
    assert "-Dtransitive=false" in calls.read_text()
    assert installed_versions(setup.out / "elasticsearch") == ["9.1.0"]


def test_a_version_that_fails_to_fetch_is_named(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    mvn = setup.bin / "mvn"
    mvn.write_text("#!/bin/sh\necho '[ERROR] Could not resolve the artifact'\nexit 1\n")
    mvn.chmod(0o755)
    setup.pin("8.17.0", "9.9.9")
    setup.in_repository("8.17.0")
    assert setup.run() == 1
    captured = capsys.readouterr()
    assert "[1/2] elasticsearch 8.17.0: unpacked into" in captured.out
    assert (
        "elasticsearch: fetching Elasticsearch 9.9.9 "
        "(org.elasticsearch.distribution.integ-test-zip:elasticsearch:9.9.9:zip) failed: "
        "mvn exited with 1"
    ) in captured.err
    assert "Could not resolve the artifact" in captured.err
    assert "retry with: python3 tools/elasticsearch.py 9.9.9" in captured.err
    assert "elasticsearch: not ready: 9.9.9" in captured.err
    assert installed_versions(setup.out / "elasticsearch") == ["8.17.0"]


def test_no_mvn_is_one_line_and_exit_code_2(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    setup.pin("8.17.0", "9.1.0")
    setup.in_repository("8.17.0")
    assert setup.run() == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "elasticsearch: mvn is not installed; Maven fetches the Elasticsearch distributions "
        "(9.1.0), without them the tests that run Elasticsearch are skipped\n"
    )
    assert not (setup.out / "elasticsearch" / "8.17.0").exists()


def test_a_version_not_pinned_is_refused(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    setup.pin("8.17.0")
    assert setup.run("8.18.0") == 2
    assert "elasticsearch: 8.18.0 not pinned in" in capsys.readouterr().err


# --- the real distributions ---------------------------------------------------------------------


def test_make_tools_unpacked_every_pinned_version() -> None:
    root = distributions.default_root()
    if not root.is_dir():
        pytest.skip(f"{root} does not exist: `make tools` has not fetched Elasticsearch")
    installed = installed_versions(root)
    assert [version for version in pinned_versions() if version not in installed] == []
    for version in pinned_versions():
        assert os.access(root / version / "bin" / "elasticsearch", os.X_OK)
        assert (root / version / "lib").is_dir()
        assert (root / version / "data").is_dir()
