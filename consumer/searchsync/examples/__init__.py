"""Example aggregate types that plug in through ``[projection] modules`` (docs/consumer.md).

They are not loaded unless named in the settings, e.g.
``modules = ["searchsync.projection.wiki_page", "searchsync.examples.article"]``.
"""
