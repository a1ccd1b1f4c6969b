"""``python -m stackflow.cli``: the same as the ``stackflow`` command."""

from __future__ import annotations

import sys

from stackflow.cli import main

sys.exit(main())
