"""opensearch-py is the ``searchsync[opensearch]`` extra: every module but the OpenSearch bridge
imports without it, and choosing the engine without it is a config error naming the install
command. Each check runs in a fresh interpreter where importing ``opensearchpy`` fails."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from searchsync.config import load_settings
from searchsync.errors import ConfigError
from searchsync.search.client import make_es_client, opensearch_client_class

BLOCK = textwrap.dedent(
    """
    import sys

    class _NoOpenSearch:
        def find_spec(self, name, path=None, target=None):
            if name == "opensearchpy" or name.startswith("opensearchpy."):
                raise ImportError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, _NoOpenSearch())
    """
)


def _without_opensearch(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_module_but_the_bridge_imports_without_opensearch_py() -> None:
    result = _without_opensearch(
        """
        import importlib, pkgutil, searchsync
        bridge = "searchsync.search.opensearch"
        names = [m.name for m in pkgutil.walk_packages(searchsync.__path__, "searchsync.")]
        assert bridge in names and len(names) > 50, names
        for name in names:
            if name != bridge:
                importlib.import_module(name)
        try:
            importlib.import_module(bridge)
        except ImportError:
            print("bridge refused")
        loaded = sorted(m for m in sys.modules if m.startswith("opensearchpy"))
        print("loaded:", loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["bridge refused", "loaded: []"]


def test_config_check_on_opensearch_without_the_extra_exits_2_naming_the_extra() -> None:
    result = _without_opensearch(
        """
        import os
        from searchsync.cli import main
        os.environ.pop("SEARCHSYNC_CONFIG", None)
        os.environ["SEARCHSYNC_SEARCH_ENGINE"] = "opensearch"
        sys.exit(main(["config", "check"]))
        """
    )
    assert result.returncode == 2, result.stdout
    first = result.stderr.splitlines()[0]
    assert first.startswith(
        "config error: search.engine: expected 'elasticsearch', or 'opensearch'"
    )
    assert "pip install 'searchsync[opensearch]'" in first


def test_elasticsearch_commands_run_without_opensearch_py() -> None:
    result = _without_opensearch(
        """
        import os
        from searchsync.cli import main
        os.environ.pop("SEARCHSYNC_CONFIG", None)
        os.environ.pop("SEARCHSYNC_SEARCH_ENGINE", None)
        code = main(["config", "check"])
        assert not [m for m in sys.modules if m.startswith("opensearchpy")]
        sys.exit(code)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "config ok"


async def test_with_the_extra_the_engine_gets_the_bridge() -> None:
    settings = load_settings({"SEARCHSYNC_SEARCH_ENGINE": "opensearch"})
    client = make_es_client(settings)
    try:
        assert isinstance(client, opensearch_client_class())
    finally:
        await client.close()


def test_the_error_is_a_config_error_on_the_engine_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "searchsync.search.opensearch", None)
    with pytest.raises(ConfigError) as caught:
        opensearch_client_class()
    assert caught.value.key == "search.engine"
    assert caught.value.got == "opensearch"
    assert "pip install 'searchsync[opensearch]'" in caught.value.expected
