"""The part of `kubectl kustomize` that deploy/k8s uses, so the tests render the base and the
overlays without kubectl: `resources` (files and directories), `images` and `configMapGenerator`
(files, behavior create or replace). Any other key fails, so a kustomization that grows a feature
this reader does not know is never checked half. Generated names keep no hash suffix (kustomize
adds one and rewrites the references to it: same documents otherwise)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

Doc = dict[str, Any]
KNOWN = {"apiVersion", "kind", "resources", "images", "configMapGenerator"}


def build(directory: Path) -> list[Doc]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN
    assert not unknown, f"{directory}: kustomization keys this reader does not know: {unknown}"
    docs: list[Doc] = []
    for entry in kustomization.get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            docs.extend(build(path))
        else:
            docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d is not None)
    for generator in kustomization.get("configMapGenerator", []):
        _generate(directory, generator, docs)
    for image in kustomization.get("images", []):
        for container in containers(docs):
            if container["image"].split(":")[0] == image["name"]:
                name = image.get("newName", image["name"])
                tag = image.get("newTag")
                container["image"] = name if tag is None else f"{name}:{tag}"
    return docs


def _generate(directory: Path, generator: Doc, docs: list[Doc]) -> None:
    assert set(generator) <= {"name", "behavior", "files"}, generator
    data: dict[str, str] = {}
    for entry in generator.get("files", []):
        key, _, source = entry.rpartition("=") if "=" in entry else ("", "", entry)
        path = directory / source
        data[key or path.name] = path.read_text()
    behavior = generator.get("behavior", "create")
    existing = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == generator["name"]
    ]
    if behavior == "replace":
        assert len(existing) == 1, f"replace: no ConfigMap {generator['name']} in the base"
        existing[0]["data"] = data
        return
    assert behavior == "create" and not existing, f"ConfigMap {generator['name']}: {behavior}"
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": generator["name"]},
            "data": copy.deepcopy(data),
        }
    )


def pod_spec(doc: Doc) -> Doc | None:
    """The pod template's spec of a workload (Deployment, Job, CronJob), None for other kinds."""
    kind = doc["kind"]
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        spec: Doc = doc["spec"]["template"]["spec"]
        return spec
    if kind == "CronJob":
        spec = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        return spec
    return None


def containers(docs: list[Doc]) -> list[Doc]:
    found: list[Doc] = []
    for doc in docs:
        spec = pod_spec(doc)
        if spec is not None:
            found.extend(spec.get("initContainers", []))
            found.extend(spec["containers"])
    return found
