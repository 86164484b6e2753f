"""The physical indices ``<alias>_v<N>`` behind an alias, for `searchsync index list|rollback|drop`
(docs/design.md, "Schema fence", invariants 8, 15). Refusals raise `InvalidRequest` (no such
index: exit 2) or `OperationRefused` (unsafe now: exit 1), each saying what to do instead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.naming import physical_version, read_alias_name
from searchsync.search.port import IndexAdmin, IndexInfo


@dataclass(frozen=True, slots=True)
class AliasListing:
    alias: str
    indices: tuple[IndexInfo, ...]  # by N

    @property
    def write_index(self) -> IndexInfo | None:
        return next((row for row in self.indices if row.is_write_index), None)

    @property
    def read_alias(self) -> str:
        return read_alias_name(self.alias)


@dataclass(frozen=True, slots=True)
class RollbackResult:
    alias: str
    from_index: str
    to_index: str
    from_schema_version: int | None
    to_schema_version: int | None
    dry_run: bool

    @property
    def message(self) -> str:
        verb = "would move" if self.dry_run else "moved"
        old, new = _shown(self.from_schema_version), _shown(self.to_schema_version)
        text = (
            f"{verb} alias {self.alias} and its read alias {read_alias_name(self.alias)} from "
            f"{self.from_index} (schema {old}) to {self.to_index} (schema {new}) in one atomic "
            "_aliases call"
        )
        if old != new:
            text += f"; consumers projecting schema {new} resume, those projecting {old} are fenced"
        return text + f"; {self.from_index} is kept"


@dataclass(frozen=True, slots=True)
class DropResult:
    alias: str
    index: str
    docs: int
    schema_version: int | None
    dry_run: bool

    @property
    def message(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        return (
            f"{verb} {self.index} ({self.docs} documents, schema "
            f"{_shown(self.schema_version)}); alias {self.alias} does not point at it"
        )


async def list_alias(admin: IndexAdmin, alias: str) -> AliasListing:
    """Every ``<alias>_v<N>`` and every index the alias points at, by N."""
    return AliasListing(alias, tuple(await admin.list_indices(alias)))


async def rollback(
    admin: IndexAdmin, alias: str, *, to: str | None = None, dry_run: bool = False
) -> RollbackResult:
    """Move `alias` and its read alias, in one ``_aliases`` call, from the write index to `to`,
    or to the highest ``_v<N>`` below it."""
    listing = await list_alias(admin, alias)
    current = listing.write_index
    if current is None:
        raise OperationRefused(
            f"alias {alias} has no write index: nothing to roll back "
            "(see `searchsync index list`; `searchsync index init` creates the first one)"
        )
    if to is not None:
        target = _named(alias, listing.indices, to)
        if target.name == current.name:
            raise OperationRefused(f"alias {alias} already writes to {to}: nothing to do")
    else:
        top = current.version or 0
        below = [row for row in listing.indices if row.version is not None and row.version < top]
        if not below:
            raise OperationRefused(
                f"no index of {alias} below {current.name} to roll back to; "
                "name one with --to (see `searchsync index list`)"
            )
        target = max(below, key=lambda row: row.version or 0)
    if not dry_run:
        await admin.swap_alias(alias, old=current.name, new=target.name)
    return RollbackResult(
        alias, current.name, target.name, current.schema_version, target.schema_version, dry_run
    )


async def drop(admin: IndexAdmin, alias: str, index: str, *, dry_run: bool = False) -> DropResult:
    """Delete the physical index `index` of `alias`, unless the alias or its read alias points
    at it."""
    row = _named(alias, (await list_alias(admin, alias)).indices, index)
    if row.aliased or row.read_aliased:
        role = "writes to" if row.is_write_index else "reads from"
        raise OperationRefused(
            f"alias {alias} {role} {index}: it cannot be dropped; move the alias first "
            "(`searchsync index rollback`, or a rebuild's swap)"
        )
    if not dry_run:
        # Checked again just before: a swap meanwhile must not lose the alias's target.
        if _named(alias, (await list_alias(admin, alias)).indices, index).aliased:
            raise OperationRefused(f"alias {alias} was moved onto {index} meanwhile: not dropped")
        await admin.delete_index(index)
    return DropResult(alias, index, row.docs, row.schema_version, dry_run)


def _named(alias: str, rows: Sequence[IndexInfo], name: str) -> IndexInfo:
    if physical_version(alias, name) is None:
        raise InvalidRequest(f"{name} is not a physical index of {alias} ({alias}_v<N>)")
    found = next((row for row in rows if row.name == name), None)
    if found is None:
        raise InvalidRequest(f"no index {name}; `searchsync index list` shows what exists")
    return found


def _shown(version: int | None) -> str:
    return "unrecorded" if version is None else str(version)
