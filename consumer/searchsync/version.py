"""The installed distribution's version (``searchsync --version``, ``searchsync.__version__``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("searchsync")
except PackageNotFoundError:  # a source tree on sys.path without an install
    __version__ = "0+unknown"
