"""The projector registry built from ``[projection] modules`` (`registry_from_settings`), so every
command sees the same aggregate types. An entry is ``"pkg.module"`` (its ``projectors()`` returns
`Projector`s) or ``"pkg.module:name"`` (a `Projector`, or a callable returning one or several).
Any failure to get projectors from an entry, or two for one type, is a `ConfigError` on
``projection.modules``."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Final

from searchsync.config import PROJECTION_ENTRY_FORM, ProjectionSettings
from searchsync.errors import ConfigError
from searchsync.projection._registry import Projector, ProjectorRegistry

SETTING_KEY: Final = "projection.modules"
MODULE_FUNCTION: Final = "projectors"  # what a module named without ``:name`` defines
_RENAMED: Final = {  # the built-in modules' former names, still accepted
    "consumer.projection.wiki_page": "searchsync.projection.wiki_page",
    "consumer.examples.article": "searchsync.examples.article",
}


def registry_from_settings(settings: ProjectionSettings) -> ProjectorRegistry:
    """A new registry with the projectors of every entry of ``settings.modules``, in order."""
    registry = ProjectorRegistry()
    source: dict[str, str] = {}
    for entry in settings.modules:
        for projector in load_entry(entry):
            kind = projector.aggregate_type
            if kind in source:
                twice = f"{kind!r} comes from {source[kind]!r} and {entry!r}"
                raise _error(entry, f"one projector per aggregate type, but {twice}")
            source[kind] = entry
            registry.register(projector)
    return registry


def load_entry(entry: str) -> tuple[Projector, ...]:
    """The projectors one entry names; a `ConfigError` on ``projection.modules`` if none."""
    module_name, _, attribute = entry.partition(":")
    module_name = _RENAMED.get(module_name, module_name)
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise _error(entry, _not_found(module_name, exc.name)) from exc
    except Exception as exc:  # the plug-in's own import failed: say how, stop start-up
        raise _error(entry, f"importing {module_name!r} {_raised(exc)}") from exc
    path = attribute.split(".") if attribute else [MODULE_FUNCTION]
    for depth, name in enumerate(path):
        if not hasattr(target, name):
            where = ".".join([module_name, *path[:depth]])
            raise _error(entry, f"{where} has no attribute {name!r}")
        target = getattr(target, name)
    if isinstance(target, Projector):
        return (target,)
    if not callable(target):
        raise _error(entry, f"it is a {type(target).__name__}, not a Projector or a callable")
    try:
        produced = target()
    except Exception as exc:  # includes a Projector whose definition is invalid (ValueError)
        raise _error(entry, f"calling it {_raised(exc)}") from exc
    if isinstance(produced, Projector):
        return (produced,)
    if isinstance(produced, str | bytes | Mapping) or not isinstance(produced, Iterable):
        raise _error(entry, f"it returned a {type(produced).__name__}, not Projectors")
    out = tuple(produced)
    for item in out:
        if not isinstance(item, Projector):
            raise _error(entry, f"it returned a {type(item).__name__} among its Projectors")
    if not out:
        raise _error(entry, "it returned no Projector")
    return out


def _not_found(module_name: str, missing: str | None) -> str:
    """The cause of a `ModuleNotFoundError`, with how to make the package importable."""
    missing = missing or module_name
    top = missing.partition(".")[0]
    if module_name == missing or module_name.startswith(f"{missing}."):
        return (
            f"no module named {missing!r}: install the package that provides {top!r} into"
            f" searchsync's Python (pip install ...), or add the folder holding {top!r} to"
            " PYTHONPATH"
        )
    return (  # the module was found, one of its own imports was not
        f"importing {module_name!r} needs {missing!r}, which is not installed: pip install the"
        f" package that provides {top!r} into searchsync's Python"
    )


def _raised(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"raised {type(exc).__name__}: {text.splitlines()[0] if text else type(exc).__name__}"


def _error(entry: str, reason: str) -> ConfigError:
    return ConfigError(SETTING_KEY, PROJECTION_ENTRY_FORM, entry, cause=f"{entry!r}: {reason}")
