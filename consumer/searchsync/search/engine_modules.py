"""Which engine module a refused mapping needs, from the engine's own error text.

Elasticsearch and OpenSearch ship field types, analysers and scripting as modules; a stripped
distribution (the local stack's integ-test builds) lacks most of them, and creating an index whose
mapping uses one fails with a message that names the type but not the module. `missing_module`
turns that message into one line that names the module and the fix."""

from __future__ import annotations

import re
from typing import Final

MAPPER_MODULES: Final = {
    "scaled_float": "mapper-extras",
    "rank_feature": "mapper-extras",
    "rank_features": "mapper-extras",
    "search_as_you_type": "mapper-extras",
    "token_count": "mapper-extras",
    "match_only_text": "mapper-extras",
    "join": "parent-join",
    "percolator": "percolator",
    "icu_collation_keyword": "analysis-icu (a plugin)",
    "murmur3": "mapper-murmur3 (a plugin)",
    "knn_vector": "opensearch-knn (a plugin)",
}
"""Field types that core lacks, by the module (or plugin) that adds them."""

_MAPPER = re.compile(  # Elasticsearch's wording, then OpenSearch's
    r"(?:[Tt]he mapper type|No handler for type) \[([^\]]+)\] declared on field \[([^\]]*)\]"
)
_ANALYSIS = re.compile(
    r"Unknown (tokenizer|filter|char_filter|analyzer|normalizer) type \[([^\]]+)\]"
)
_ANALYZER_NAME = re.compile(
    r"(?:analyzer|normalizer) \[([^\]]+)\] (?:has )?not (?:been )?configured"
)
_SCRIPT = re.compile(
    r"(?:script_lang not supported|unable to find script language|lang)"
    r" \[(painless|expression|mustache)\]"
)


def missing_module(error_text: str) -> str | None:
    """One line naming the module an engine error shows missing, and the fix; None otherwise."""
    if found := _MAPPER.search(error_text):
        kind, field = found.groups()
        module = MAPPER_MODULES.get(kind, "a module or plugin")
        return _line(module, f"field type [{kind}] (on field [{field}])")
    if found := _ANALYSIS.search(error_text):
        what, kind = found.groups()
        return _line("analysis-common", f"{what.replace('_', ' ')} type [{kind}]")
    if found := _ANALYZER_NAME.search(error_text):
        return _line("analysis-common", f"analyzer [{found.group(1)}]")
    if found := _SCRIPT.search(error_text):
        lang = found.group(1)
        return _line(f"lang-{lang}", f"script language [{lang}]")
    return None


def _line(module: str, what: str) -> str:
    return (
        f"the search engine lacks the module {module} ({what} in the mapping): install it on"
        " the cluster (a full distribution has it), or change the mapping not to need it"
    )
