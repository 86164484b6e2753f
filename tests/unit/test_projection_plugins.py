"""Aggregate types by configuration: ``[projection] modules`` and the registry built from it."""

from __future__ import annotations

import asyncio
import os
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from searchsync.cli import main
from searchsync.cli.args import chosen_type
from searchsync.config import ProjectionSettings, load_settings
from searchsync.errors import ConfigError
from searchsync.examples import article
from searchsync.exit_codes import ExitCode
from searchsync.projection import Projector, default_registry, registry_from_settings, wiki_page
from searchsync.projection.plugins import SETTING_KEY, load_entry
from searchsync.runtime import Runtime, run_consumer

KEY = "projection.modules"


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory on sys.path where a test writes its own plug-in modules."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)
    yield


def write_module(directory: Path, source: str) -> str:
    """A new module with `source` (names are unique, so no test sees another's cached module)."""
    name = f"plugin_{uuid.uuid4().hex[:12]}"
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def registry_of(*modules: str) -> tuple[str, ...]:
    return registry_from_settings(ProjectionSettings(modules=modules)).types()


def config_error(*modules: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        registry_from_settings(ProjectionSettings(modules=modules))
    error = caught.value
    assert error.key == KEY == SETTING_KEY
    assert "pkg.module" in error.expected  # every error shows the expected form
    return error


# -- settings ----------------------------------------------------------------------------------


def test_the_default_is_the_built_in_wiki_page_only() -> None:
    settings = load_settings({})
    assert settings.projection.modules == ("searchsync.projection.wiki_page",)
    assert registry_from_settings(settings.projection).types() == ("wiki_page",)
    assert default_registry().types() == ("wiki_page",)


def test_modules_from_toml_and_from_a_comma_separated_env_var(tmp_path: Path) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text('[projection]\nmodules = ["searchsync.examples.article"]\n', encoding="utf-8")
    assert load_settings({}, toml).projection.modules == ("searchsync.examples.article",)
    env = {"SEARCHSYNC_PROJECTION_MODULES": " searchsync.projection.wiki_page , pkg.mod:obj.attr "}
    from_env = load_settings(env, toml).projection.modules
    assert from_env == ("searchsync.projection.wiki_page", "pkg.mod:obj.attr")


@pytest.mark.parametrize(
    "value",
    ["", "a b", "pkg..mod", "pkg.mod:", ":obj", "pkg/mod", "1pkg", "pkg.mod:a:b", "a,a"],
)
def test_malformed_entries_are_config_errors_on_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_PROJECTION_MODULES": value})
    assert caught.value.key == KEY


@pytest.mark.parametrize("text", ["modules = []", "modules = 'pkg.mod'", "modules = [1]"])
def test_malformed_toml_values_are_config_errors_on_the_key(tmp_path: Path, text: str) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text(f"[projection]\n{text}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings({}, toml)
    assert caught.value.key == KEY


# -- the plug-in contract ----------------------------------------------------------------------


def test_a_module_entry_uses_its_projectors_function() -> None:
    assert registry_of("searchsync.projection.wiki_page", "searchsync.examples.article") == (
        "article",
        "wiki_page",
    )


def test_an_object_entry_may_name_a_projector_or_a_callable(plugin_dir: Path) -> None:
    name = write_module(
        plugin_dir,
        """
        from searchsync.examples import article
        from searchsync.projection import wiki_page

        ARTICLE = article.projector()

        class Holder:
            both = staticmethod(lambda: [article.projector(), wiki_page.projector()])
        """,
    )
    assert registry_of(f"{name}:ARTICLE") == ("article",)
    assert registry_of("searchsync.examples.article:projector") == ("article",)  # returns one
    assert registry_of(f"{name}:Holder.both") == ("article", "wiki_page")  # returns several
    [loaded] = load_entry(f"{name}:ARTICLE")
    assert isinstance(loaded, Projector) and loaded.aggregate_type == article.AGGREGATE_TYPE


def test_the_registry_projects_with_the_plugged_in_projector() -> None:
    registry = registry_from_settings(
        ProjectionSettings(
            modules=("searchsync.projection.wiki_page", "searchsync.examples.article")
        )
    )
    tags = [{"article_id": "a1", "tag": "x", "position": 0}]
    row = {"id": "a1", "title": "t", "body": "b", "tags": tags, "author": None, "revision": 1}
    assert registry.get("article").project({**row, "deleted_at": None}).body["tags"] == ["x"]
    assert registry.get("wiki_page").schema_version == wiki_page.SCHEMA_VERSION


def test_a_module_that_does_not_exist() -> None:
    error = config_error("no_such_package_for_searchsync.projectors")
    assert "no_such_package_for_searchsync" in str(error.cause)
    assert error.got == "no_such_package_for_searchsync.projectors"


def test_a_module_that_fails_to_import(plugin_dir: Path) -> None:
    name = write_module(plugin_dir, "raise RuntimeError('broken plug-in')\n")
    assert "RuntimeError: broken plug-in" in config_error(name).cause


def test_a_module_without_projectors(plugin_dir: Path) -> None:
    name = write_module(plugin_dir, "VALUE = 1\n")
    assert "has no attribute 'projectors'" in config_error(name).cause


def test_a_missing_object(plugin_dir: Path) -> None:
    name = write_module(plugin_dir, "class A:\n    pass\n")
    assert f"{name} has no attribute 'nope'" in config_error(f"{name}:nope").cause
    assert f"{name}.A has no attribute 'b'" in config_error(f"{name}:A.b").cause


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("obj = 42\n", "int, not a Projector"),
        ("obj = {'aggregate_type': 'x'}\n", "dict, not a Projector"),
        ("def obj():\n    return 'wiki_page'\n", "returned a str"),
        ("def obj():\n    return None\n", "returned a NoneType"),
        ("def obj():\n    return [object()]\n", "returned a object among"),
        ("def obj():\n    return []\n", "returned no Projector"),
        ("def obj(required):\n    return []\n", "calling it raised TypeError"),
        ("def obj():\n    raise ValueError('bad mapping')\n", "ValueError: bad mapping"),
    ],
)
def test_an_object_that_is_not_a_projector(plugin_dir: Path, source: str, says: str) -> None:
    name = write_module(plugin_dir, source)
    assert says in config_error(f"{name}:obj").cause


def test_a_module_whose_projectors_are_not_projectors(plugin_dir: Path) -> None:
    name = write_module(plugin_dir, "def projectors():\n    return ['wiki_page']\n")
    assert "returned a str among" in config_error(name).cause


def test_two_projectors_for_one_type() -> None:
    error = config_error(
        "searchsync.projection.wiki_page", "searchsync.projection.wiki_page:projector"
    )
    assert "'wiki_page' comes from 'searchsync.projection.wiki_page'" in str(error.cause)


def test_two_projectors_for_one_type_in_one_entry(plugin_dir: Path) -> None:
    name = write_module(
        plugin_dir,
        """
        from searchsync.projection import wiki_page

        def projectors():
            return (wiki_page.projector(), wiki_page.projector())
        """,
    )
    assert "one projector per aggregate type" in config_error(name).cause


# -- every command builds its registry from the settings ---------------------------------------


def test_run_stops_before_connecting_on_a_bad_module() -> None:
    settings = load_settings(
        {
            "SEARCHSYNC_PROJECTION_MODULES": "no_such_package_for_searchsync",
            "SEARCHSYNC_MYSQL_HOST": "127.0.0.1",
        }
    )
    with pytest.raises(ConfigError) as caught:
        asyncio.run(run_consumer(settings))
    assert caught.value.key == KEY


@pytest.mark.parametrize(
    "argv", [["run"], ["index", "init", "--dry-run"], ["index", "describe"], ["config", "check"]]
)
def test_commands_exit_2_naming_the_key(
    argv: list[str],
    clean_env: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SEARCHSYNC_PROJECTION_MODULES", "no_such_package_for_searchsync")
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://127.0.0.1:9")
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "config error: projection.modules" in err
    assert "no_such_package_for_searchsync" in err


def test_index_init_knows_the_configured_types(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://127.0.0.1:9")
    assert main(["index", "init", "--type", "article", "--dry-run"]) == ExitCode.USAGE
    assert "unknown aggregate type 'article'" in capsys.readouterr().err


def test_type_defaults_to_the_only_registered_one_and_is_asked_for_among_several(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://127.0.0.1:9")
    monkeypatch.setenv("SEARCHSYNC_PROJECTION_MODULES", "searchsync.examples.article")
    assert main(["rebuild", "--dry-run", "--type", "wiki_page"]) == ExitCode.USAGE
    assert "unknown aggregate type 'wiki_page'; known: article" in capsys.readouterr().err
    assert main(["config", "check", "--json"]) == ExitCode.OK
    assert '"registered_types": [\n    "article"\n  ]' in capsys.readouterr().out
    monkeypatch.setenv(
        "SEARCHSYNC_PROJECTION_MODULES",
        "searchsync.projection.wiki_page,searchsync.examples.article",
    )
    for argv in (["index", "init", "--dry-run"], ["rebuild", "--dry-run"], ["index", "rollback"]):
        assert main(argv) == ExitCode.USAGE
        err = capsys.readouterr().err
        assert "choose one with --type: article, wiki_page" in err
    registry = registry_from_settings(
        load_settings({"SEARCHSYNC_PROJECTION_MODULES": "searchsync.examples.article"}).projection
    )
    assert chosen_type(cast(Runtime, SimpleNamespace(registry=registry)), None) == "article"
