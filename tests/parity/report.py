"""Run a scenario in both worlds outside pytest and print every difference as a table row::

    python -m tests.parity.report [SCENARIO] [--keep DIR]

The rows (reason left to write) are what DIFFERENCES.md needs when a difference is new.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.parity.compare import diff, short
from tests.parity.scenarios import SCENARIOS
from tests.parity.worlds import run_eck, run_stackflow


async def _main(name: str, directory: Path) -> int:
    (scenario,) = [s for s in SCENARIOS if s.name == name]
    began = time.monotonic()
    eck = await run_eck(directory / "eck", scenario)
    (directory / "eck.json").write_text(json.dumps(eck, indent=1, sort_keys=True))
    stackflow = await run_stackflow(directory / "stackflow", scenario)
    (directory / "stackflow.json").write_text(json.dumps(stackflow, indent=1, sort_keys=True))
    for found in diff(eck, stackflow):
        cells = [scenario.name, f"`{found.object}`", f"`{found.path}`"]
        cells += [short(found.eck).replace("|", "\\|"), short(found.stackflow).replace("|", "\\|")]
        print("| " + " | ".join(cells) + " | |")
    print(f"# {time.monotonic() - began:.0f} s; worlds in {directory}", file=sys.stderr)
    return 0


def main() -> int:
    """Run one scenario (the first by default) and print its rows."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenario", nargs="?", default=SCENARIOS[0].name)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="parity-"))
    return asyncio.run(_main(args.scenario, directory))


if __name__ == "__main__":
    sys.exit(main())
