"""``python -m kubesim``: the kubesim command line."""

from __future__ import annotations

import sys

from kubesim.cli import main

if __name__ == "__main__":
    sys.exit(main())
