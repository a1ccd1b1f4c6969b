"""The Elasticsearch distributions ``make tools`` unpacks, and a Java each one can run on.

``tools/elasticsearch.py`` unpacks every version pinned in ``tools/elasticsearch/versions.txt`` into
``.tools/elasticsearch/<version>`` (``STACKFLOW_ELASTICSEARCH_DIR`` points elsewhere). The minimal
distribution bundles no JDK: 8.x runs on Java 17 to 24, 9.x on Java 21 or newer, found among the JDK
homes under ``/usr/lib/jvm`` and ``JAVA_HOME`` (``STACKFLOW_JAVA_HOME_8`` / ``STACKFLOW_JAVA_HOME_9``
choose one). Standing alone: nothing of the operator is imported::

    from esrunner.distributions import distribution, unavailable_reason

    reason = unavailable_reason("8.17.0")  # None, or why it cannot run (a test's skip reason)
    es = distribution("8.17.0")  # or DistributionUnavailable, saying what is missing
    subprocess.Popen([es.executable], env={**os.environ, **es.environment()})
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where ``make tools`` unpacks the distributions; ``STACKFLOW_ELASTICSEARCH_DIR`` overrides it.
DEFAULT_ROOT = REPO / ".tools" / "elasticsearch"
ROOT_ENV = "STACKFLOW_ELASTICSEARCH_DIR"
#: The versions ``make tools`` fetches, one a line.
PINNED = REPO / "tools" / "elasticsearch" / "versions.txt"
#: Written last into each unpacked version by tools/elasticsearch.py: the version is complete.
STAMP = ".stamp"
#: Where the machine's JDKs are, one home per directory (``JAVA_HOME`` is looked at too).
JVM_DIRS = (Path("/usr/lib/jvm"),)
#: ``STACKFLOW_JAVA_HOME_<major>``: the JDK home to run that Elasticsearch major on.
JAVA_ENV = "STACKFLOW_JAVA_HOME_{major}"

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_RELEASE_VERSION = re.compile(r'^JAVA_VERSION="?([^"\s]+)"?', re.MULTILINE)
_SPECIFICATION = re.compile(r"java\.specification\.version = (\S+)")


class DistributionUnavailable(Exception):  # noqa: N818 - a state, like ElasticsearchUnavailable
    """A distribution that cannot run here; the message says what is missing and how to get it."""


def parse_version(version: str) -> tuple[int, int, int]:
    """``"8.17.0"`` as ``(8, 17, 0)``, to compare and sort versions; ValueError for anything else."""
    match = _VERSION.fullmatch(version.strip())
    if match is None:
        raise ValueError(f"{version!r} is not an Elasticsearch version like 8.17.0")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def default_root() -> Path:
    """``STACKFLOW_ELASTICSEARCH_DIR`` when set, else :data:`DEFAULT_ROOT`."""
    return Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)


def pinned_versions(path: Path = PINNED) -> list[str]:
    """The versions pinned for ``make tools``, in file order (``#`` starts a comment)."""
    versions: list[str] = []
    for line in path.read_text().splitlines():
        version = line.split("#", 1)[0].strip()
        if version:
            parse_version(version)
            versions.append(version)
    return versions


def installed_versions(root: Path | None = None) -> list[str]:
    """The completely unpacked versions under ``root`` (default :func:`default_root`), oldest
    first."""
    directory = root if root is not None else default_root()
    if not directory.is_dir():
        return []
    found = [
        child.name
        for child in directory.iterdir()
        if _VERSION.fullmatch(child.name)
        and (child / STAMP).is_file()
        and (child / "bin" / "elasticsearch").is_file()
    ]
    return sorted(found, key=parse_version)


@dataclass(frozen=True)
class JavaRule:
    """The Java majors one Elasticsearch major runs on, and which of them to prefer."""

    lowest: int
    highest: int | None
    prefer_newest: bool

    def fits(self, major: int) -> bool:
        """Whether Java ``major`` runs this Elasticsearch."""
        return major >= self.lowest and (self.highest is None or major <= self.highest)

    def describe(self) -> str:
        """``Java 17 to 24`` or ``Java 21 or newer``."""
        if self.highest is None:
            return f"Java {self.lowest} or newer"
        return f"Java {self.lowest} to {self.highest}"


#: By Elasticsearch major: 8.x refuses Java 25 and prefers the LTS 17; 9.x needs 21 or newer.
JAVA_RULES = {
    8: JavaRule(lowest=17, highest=24, prefer_newest=False),
    9: JavaRule(lowest=21, highest=None, prefer_newest=True),
}


def java_rule(version: str) -> JavaRule | None:
    """The Java that ``version`` runs on; None for a major esrunner does not know."""
    return JAVA_RULES.get(parse_version(version)[0])


def java_major(home: Path) -> int | None:
    """The Java major of a JDK home: its ``release`` file's ``JAVA_VERSION``, else what its
    ``bin/java`` reports; None when it is not a JDK home."""
    java = home / "bin" / "java"
    if not (java.is_file() and os.access(java, os.X_OK)):
        return None
    try:
        match = _RELEASE_VERSION.search((home / "release").read_text(errors="replace"))
    except OSError:
        match = None
    if match is None:
        try:
            shown = subprocess.run(
                [str(java), "-XshowSettings:properties", "-version"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        match = _SPECIFICATION.search(shown.stderr + shown.stdout)
        if match is None:
            return None
    return _major(match.group(1))


def _major(java_version: str) -> int | None:
    """``17.0.15`` → 17, ``21`` → 21, ``1.8.0_392`` → 8."""
    parts = java_version.split(".")
    try:
        return int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])
    except ValueError:
        return None


def java_homes() -> list[Path]:
    """The machine's JDK homes: ``JAVA_HOME`` first, then each directory under ``/usr/lib/jvm``,
    each real directory once."""
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    for directory in JVM_DIRS:
        if directory.is_dir():
            candidates.extend(sorted(directory.iterdir()))
    homes: list[Path] = []
    for candidate in candidates:
        home = candidate.resolve()
        if home not in homes and (home / "bin" / "java").is_file():
            homes.append(home)
    return homes


def _choose_java(version: str, homes: Iterable[Path] | None) -> tuple[Path | None, str]:
    """The JDK home for ``version``, or None and why there is none."""
    rule = java_rule(version)
    major = parse_version(version)[0]
    if rule is None:
        known = " and ".join(str(known) for known in sorted(JAVA_RULES))
        return None, f"esrunner knows the Java of Elasticsearch {known} only"
    variable = JAVA_ENV.format(major=major)
    chosen = os.environ.get(variable)
    if chosen:
        found = java_major(Path(chosen))
        if found is None:
            return None, f"it needs {rule.describe()}, and {variable}={chosen} is not a JDK home"
        if not rule.fits(found):
            return None, f"it needs {rule.describe()}, and {variable}={chosen} is Java {found}"
        return Path(chosen), ""
    majors = [(java_major(home), home) for home in (java_homes() if homes is None else homes)]
    known_majors = [(found, home) for found, home in majors if found is not None]
    fitting = [(found, home) for found, home in known_majors if rule.fits(found)]
    if fitting:
        # The first of the preferred major wins, so JAVA_HOME breaks a tie.
        best = (max if rule.prefer_newest else min)(found for found, _ in fitting)
        return next(home for found, home in fitting if found == best), ""
    seen = ", ".join(f"Java {found} in {home}" for found, home in known_majors) or "no JDK"
    return None, (
        f"it needs {rule.describe()} and there is {seen}; install one, or set {variable} to a "
        "JDK home"
    )


def find_java(version: str, homes: Iterable[Path] | None = None) -> Path | None:
    """A JDK home ``version`` runs on: ``STACKFLOW_JAVA_HOME_<major>`` if set (and fitting), else
    the preferred fitting one of ``homes`` (default :func:`java_homes`) — for 8.x the oldest of
    17 to 24, for 9.x the newest from 21 on; None when there is none."""
    return _choose_java(version, homes)[0]


@dataclass(frozen=True)
class Distribution:
    """An unpacked Elasticsearch and the JDK home it runs on."""

    version: str
    home: Path
    java_home: Path

    @property
    def executable(self) -> Path:
        """``bin/elasticsearch``."""
        return self.home / "bin" / "elasticsearch"

    def environment(self) -> dict[str, str]:
        """The variables that make ``bin/elasticsearch`` use :attr:`java_home`."""
        return {"ES_JAVA_HOME": str(self.java_home)}


def distribution(version: str, root: Path | None = None) -> Distribution:
    """The unpacked ``version`` under ``root`` (default :func:`default_root`) with its Java, or
    :class:`DistributionUnavailable` saying what is missing."""
    parse_version(version)
    directory = root if root is not None else default_root()
    installed = installed_versions(directory)
    if version not in installed:
        try:
            pinned = pinned_versions()
        except (OSError, ValueError):
            pinned = []
        fetch = (
            f"`make tools` fetches the pinned ones ({', '.join(pinned)})"
            if version in pinned
            else f"it is not pinned in {PINNED}: add it there, then `make tools` fetches it"
        )
        raise DistributionUnavailable(
            f"Elasticsearch {version} is not installed in {directory} "
            f"(installed: {', '.join(installed) or 'none'}); {fetch}"
        )
    java_home, why = _choose_java(version, None)
    if java_home is None:
        raise DistributionUnavailable(f"no Java for Elasticsearch {version}: {why}")
    return Distribution(version=version, home=directory / version, java_home=java_home)


def unavailable_reason(version: str | None = None, *, root: Path | None = None) -> str | None:
    """Why ``version`` cannot run here, in one line (a test's skip reason); None when it can. With
    no version: None when any installed version can run, else why the newest cannot."""
    directory = root if root is not None else default_root()
    if version is not None:
        try:
            distribution(version, directory)
        except DistributionUnavailable as error:
            return str(error)
        return None
    installed = installed_versions(directory)
    if not installed:
        return f"no Elasticsearch distribution in {directory}: `make tools` fetches them with mvn"
    reasons: list[str] = []
    for candidate in reversed(installed):
        try:
            distribution(candidate, directory)
        except DistributionUnavailable as error:
            reasons.append(str(error))
        else:
            return None
    return reasons[0]
