"""``python -m searchsync``: the same as the ``searchsync`` console script."""

from __future__ import annotations

import sys

from searchsync.cli import main

if __name__ == "__main__":
    sys.exit(main())
