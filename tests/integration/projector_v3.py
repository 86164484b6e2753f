"""A wiki_page projector one schema version ahead of the packaged one (same mapping, same
fields): what a release with a changed projection would run. `projection.modules =
["tests.integration.projector_v3"]` makes a rebuild or a consumer use it
(`test_rollout_e2e.py`)."""

from __future__ import annotations

import dataclasses

from searchsync.projection import Projector, wiki_page

SCHEMA_VERSION = wiki_page.SCHEMA_VERSION + 1


def projectors() -> tuple[Projector, ...]:
    return (dataclasses.replace(wiki_page.projector(), schema_version=SCHEMA_VERSION),)
