"""The whole comparison outside pytest: ``python -m tests.conformance.report``.

Starts its own control plane (the binaries of ``make tools``) and a fresh kubesim per check, runs
every check (or those whose name contains one of the given words), and prints one line per check,
the counts line of the pytest summary, every documented difference, and the field-by-field
differences of the checks that failed. Exit status 0 when every check passed, 1 when one failed,
2 when the control plane cannot run here.

    python -m tests.conformance.report              # everything
    python -m tests.conformance.report table- gc-   # the Table and garbage-collection checks
    python -m tests.conformance.report --markdown   # DIFFERENCES.md, regenerated from the tables
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from collections.abc import Sequence

from controlplane import ControlPlane
from tests.clusters import apiserver_unavailable
from tests.conformance.differences import DIFFERENCES, FIXED, markdown
from tests.conformance.harness import Endpoint
from tests.conformance.registry import Check, all_checks
from tests.conformance.runner import (
    Outcome,
    apiserver_endpoint,
    compare_check,
    counts,
    scratch_directory,
    wait_for_namespaces,
)


def chosen(words: Sequence[str]) -> list[Check]:
    """The checks whose names contain one of ``words`` (all of them without words)."""
    checks = all_checks()
    return [check for name, check in checks.items() if not words or any(w in name for w in words)]


async def run_all(checks: Sequence[Check], endpoint: Endpoint) -> list[Outcome]:
    """Compare every check, printing a line as each finishes."""
    outcomes: list[Outcome] = []
    directory = scratch_directory()
    try:
        for check in checks:
            outcome = await compare_check(check, endpoint, workdir=directory)
            outcomes.append(outcome)
            comparison = outcome.comparison
            verdict = (
                "identical"
                if comparison.identical
                else "documented differences only"
                if comparison.passed
                else "FAILED"
            )
            print(f"  {check.name}: {verdict}", flush=True)
        left = await wait_for_namespaces(endpoint)
        if left:
            print(f"namespaces still terminating at the end: {left}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return outcomes


def print_report(outcomes: Sequence[Outcome]) -> None:
    """The counts, the documented differences (with where they showed), the failures."""
    print()
    print(counts(outcomes).line())
    print()
    print(f"Documented differences ({len(DIFFERENCES)}):")
    shown = {id(row): 0 for row in DIFFERENCES}
    for outcome in outcomes:
        for row in outcome.comparison.used:
            shown[id(row)] += 1
    for row in DIFFERENCES:
        print(f"- {row.check}: {', '.join(row.paths)}")
        print(f"    {row.reason}")
        print(f"    (seen in {shown[id(row)]} of the checks run)")
    print()
    print(f"Fixed in kubesim ({len(FIXED)}):")
    for name, what in FIXED.items():
        print(f"- {name}: {what}")
    failed = [outcome for outcome in outcomes if not outcome.comparison.passed]
    for outcome in failed:
        print()
        print(outcome.comparison.report())
    for outcome in outcomes:
        for failure in outcome.cleanup_failures:
            print(f"cleanup of {outcome.check.name} failed:\n{failure}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison; the exit status says whether every check passed."""
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.report")
    parser.add_argument("words", nargs="*", help="run only checks whose name contains a word")
    parser.add_argument(
        "--markdown", action="store_true", help="print DIFFERENCES.md from the tables and stop"
    )
    options = parser.parse_args(argv)
    if options.markdown:
        print(markdown(), end="")
        return 0
    reason = apiserver_unavailable()
    if reason:
        print(reason)
        return 2
    checks = chosen(options.words)
    plane = ControlPlane(progress=lambda line: print(line, flush=True))
    plane.start()
    try:
        endpoint = apiserver_endpoint(plane, plane.directory)
        print(f"running {len(checks)} checks against kubesim and {plane.url}", flush=True)
        outcomes = asyncio.run(run_all(checks, endpoint))
    finally:
        plane.stop()
    print_report(outcomes)
    return 0 if all(outcome.comparison.passed for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
