"""Test-wide settings.

Hypothesis' per-example deadline measures wall time, which on a loaded 2-core CI machine says more
about the machine than about the code: it is off. Speed is measured in bench/, not in tests.
"""

from hypothesis import settings

settings.register_profile("searchsync", deadline=None, print_blob=True)
settings.load_profile("searchsync")
