"""The deployment files in deploy/k8s/ and deploy/systemd/ are valid and agree with each other.

Every document of every file in deploy/k8s/base/, and every document an overlay renders, is
validated by `kubernetes-validate` against the schemas of a pinned Kubernetes version, strictly (an
unknown or misspelt field fails). Then the promises between the files, which no schema can see: the
supervisor waits longer than the drain (docs: deploy/README.md, "The shutdown deadline and the
grace period"), the probes read /healthz on the metrics port, liveness tolerates the 503 of a fenced
or paused consumer, the PDB selects the Deployment's pods, the commands run through the image's
entrypoint (the Dockerfile), the base registers no demo type while an overlay's projectors load,
and the systemd template takes its metrics port from the instance name.
"""

from __future__ import annotations

import configparser
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from searchsync.config import load_settings
from searchsync.projection import registry_from_settings

from tests.unit import dockerfile, kustomize_lite

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s" / "base"
OVERLAYS = sorted(p.parent for p in (DEPLOY / "k8s" / "overlays").glob("*/kustomization.yaml"))
# Files of the base that `kubectl apply -k` must not apply: the example Secret (it would overwrite
# the real one). A one-off Job (an initial load) belongs here too: a Job is started on purpose.
NOT_APPLIED = {"secret.example.yaml", "load-job.yaml"}  # applied by hand
PROJECTORS_CONFIGMAP = "searchsync-projectors"
PROJECTING_COMMANDS = ("run", "repair", "index")  # the commands that load [projection] modules
UNIT = DEPLOY / "systemd" / "searchsync@.service"

KUBERNETES_VERSION = "1.31.0"  # the oldest release with unhealthyPodEvictionPolicy GA
# After the drain the process still leaves the group (up to 15 s) and flushes the DLQ producer
# (up to 10 s): consumer/searchsync/app.py. The supervisor's limit must cover the drain plus these.
AFTER_DRAIN_S = 25.0

DEADLINE_ENV = "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S"
PORT_ENV = "SEARCHSYNC_OBSERVABILITY_METRICS_PORT"


KUSTOMIZATION = K8S / "kustomization.yaml"
"""Manifests `kubectl apply -k` leaves out: the example Secret, and the one-off initial load."""


def documents() -> list[tuple[str, dict[str, Any]]]:
    docs: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path == KUSTOMIZATION:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return docs


def only(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [
        doc
        for _, doc in documents()
        if doc["kind"] == kind and name in (None, doc["metadata"]["name"])
    ]
    assert len(found) == 1, f"expected one {kind} {name or ''} in deploy/k8s, found {len(found)}"
    return found[0]


def consumer_deployment() -> dict[str, Any]:
    return only("Deployment", "searchsync")


def container() -> dict[str, Any]:
    containers = consumer_deployment()["spec"]["template"]["spec"]["containers"]
    (searchsync,) = [c for c in containers if c["name"] == "searchsync"]
    assert isinstance(searchsync, dict)
    return searchsync


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def unit_environment() -> dict[str, str]:
    """Every ``Environment=KEY=VALUE`` line of [Service] (configparser keeps only the last one)."""
    values = [
        line.removeprefix("Environment=")
        for line in UNIT.read_text().splitlines()
        if line.startswith("Environment=")
    ]
    return dict(value.split("=", 1) for value in values)


def seconds(value: str) -> float:
    units = {"ms": 0.001, "s": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}
    for suffix, factor in units.items():
        if value.endswith(suffix) and value[: -len(suffix)].isdigit():
            return int(value[: -len(suffix)]) * factor
    return float(value)


def test_k8s_has_the_expected_documents() -> None:
    kinds = sorted(doc["kind"] for _, doc in documents())
    assert kinds == [
        "ConfigMap",
        "CronJob",
        "CronJob",
        "Deployment",
        "Deployment",
        "Deployment",
        "Job",
        "PodDisruptionBudget",
        "Secret",
    ]


@pytest.mark.parametrize(("name", "doc"), documents(), ids=[n for n, _ in documents()])
def test_every_k8s_document_is_valid_for_the_pinned_version(name: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_validator_rejects_a_misspelt_field() -> None:
    """Guard against a validator that accepts anything (wrong version, strict ignored)."""
    broken = yaml.safe_load((K8S / "deployment.yaml").read_text())
    broken["spec"]["template"]["spec"]["terminationGracePeriodSecond"] = 90
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_grace_period_outlasts_the_shutdown_deadline() -> None:
    deadline = float(env(container())[DEADLINE_ENV])
    grace = consumer_deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > deadline + AFTER_DRAIN_S


def test_runs_searchsync_with_the_mounted_config_and_secret_from_the_secret() -> None:
    c = container()
    assert dockerfile.entrypoint() == ["searchsync"]
    assert c["args"] == ["run"]  # after the image's entrypoint
    variables = env(c)
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = consumer_deployment()["spec"]["template"]["spec"]["volumes"]
    configmap = only("ConfigMap")
    (config_volume,) = [
        v for v in volumes if v.get("configMap", {}).get("name") == configmap["metadata"]["name"]
    ]
    assert config_volume["configMap"]["name"] == configmap["metadata"]["name"]
    (toml_key,) = configmap["data"]
    assert variables["SEARCHSYNC_CONFIG"] == f"{mounts[config_volume['name']]}/{toml_key}"
    secret = only("Secret")
    refs = {name: v["secretKeyRef"] for name, v in variables.items() if "secretKeyRef" in v}
    assert {"SEARCHSYNC_MYSQL_PASSWORD", "SEARCHSYNC_ELASTICSEARCH_API_KEY"} <= set(refs)
    for ref in refs.values():
        assert ref["name"] == secret["metadata"]["name"]
        # a required key is in the example Secret; an optional one may be left out
        assert ref.get("optional") is True or ref["key"] in secret["stringData"]
    assert refs["SEARCHSYNC_MYSQL_PASSWORD"].get("optional") is not True
    assert "password" not in configmap["data"][toml_key]


def test_probes_read_healthz_on_the_metrics_port() -> None:
    c = container()
    port = int(env(c)[PORT_ENV])
    (metrics,) = [p for p in c["ports"] if p["name"] == "metrics"]
    assert metrics["containerPort"] == port
    assert env(c)["SEARCHSYNC_OBSERVABILITY_METRICS_HOST"] == "0.0.0.0"
    readiness = c["readinessProbe"]["httpGet"]
    assert readiness["path"] == "/healthz"
    assert readiness["port"] in ("metrics", port)
    annotations = consumer_deployment()["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)


def test_liveness_reads_livez_and_tolerates_not_ready() -> None:
    """Liveness must not restart a fenced consumer on /healthz's 503: it reads /livez, which
    answers 200 whenever the event loop answers, on the metrics port."""
    liveness = container()["livenessProbe"]
    assert "exec" not in liveness
    assert liveness["httpGet"]["path"] == "/livez"
    assert liveness["httpGet"]["port"] == container()["readinessProbe"]["httpGet"]["port"]


def test_pdb_selects_the_deployment_pods() -> None:
    deployment = consumer_deployment()
    pdb = only("PodDisruptionBudget")
    selector = pdb["spec"]["selector"]["matchLabels"]
    assert selector == deployment["spec"]["selector"]["matchLabels"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
    assert pdb["spec"]["maxUnavailable"] < deployment["spec"]["replicas"]


def test_systemd_unit_takes_its_port_from_the_instance_name() -> None:
    assert unit_environment()[PORT_ENV] == "%i"
    service = unit()["Service"]
    assert service["KillSignal"] == "SIGTERM"
    assert service["Restart"] == "on-failure"
    assert service["User"] not in ("", "root")
    assert service["EnvironmentFile"].lstrip("-").startswith("/")
    assert service["ExecStart"].split()[-1] == "run"


def test_systemd_stop_timeout_outlasts_the_shutdown_deadline() -> None:
    deadline = float(unit_environment()[DEADLINE_ENV])
    assert seconds(unit()["Service"]["TimeoutStopSec"]) > deadline + AFTER_DRAIN_S


def test_kustomization_applies_every_manifest_but_the_example_secret() -> None:
    """`kubectl apply -k` must never overwrite the operator's real Secret with the example."""
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text())
    assert kustomization["kind"] == "Kustomization"
    listed = set(kustomization["resources"])
    present = {p.name for p in K8S.glob("*.yaml")} - {KUSTOMIZATION.name}
    assert listed == present - NOT_APPLIED
    assert all(doc["kind"] != "Secret" for n, doc in documents() if n.split(":")[0] in listed)


def scheduled_commands() -> list[tuple[str, list[str]]]:
    """Every searchsync command line a manifest or unit runs on a schedule, as a daemon or as a
    one-off Job."""
    found: list[tuple[str, list[str]]] = []
    for name, doc in documents():
        if doc["kind"] == "CronJob":
            spec = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        elif doc["kind"] in ("Deployment", "Job"):
            spec = doc["spec"]["template"]["spec"]
        else:
            continue
        for c in spec["containers"]:  # the image's ENTRYPOINT runs `args`
            found.append((name, [*dockerfile.entrypoint(), *c["args"]]))
    for path in sorted((DEPLOY / "systemd").glob("searchsync-*.service")):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read_string(path.read_text())
        exec_start = parser["Service"]["ExecStart"].split()
        found.append((path.name, ["searchsync", *exec_start[1:]]))
    return found


@pytest.mark.parametrize(
    ("name", "argv"), scheduled_commands(), ids=[n for n, _ in scheduled_commands()]
)
def test_every_scheduled_command_parses_with_the_real_cli(name: str, argv: list[str]) -> None:
    from searchsync.cli import build_parser

    assert argv[0] == "searchsync"
    # $(LOAD_PART): what Kubernetes puts there for the first pod of the indexed load Job
    args = build_parser().parse_args([a.replace("$(LOAD_PART)", "0") for a in argv[1:]])
    assert callable(args.func)
    if "--older-than" in argv:  # at least the default retention minimum (7d), or it is refused
        assert seconds(argv[argv.index("--older-than") + 1]) >= 7 * 86_400


def test_cleanups_run_one_at_a_time_and_the_repair_daemon_alone() -> None:
    for name in ("searchsync-tombstones-purge", "searchsync-outbox-prune"):
        assert only("CronJob", name)["spec"]["concurrencyPolicy"] == "Forbid"
        timer = DEPLOY / "systemd" / f"{name}.timer"
        assert (DEPLOY / "systemd" / f"{name}.service").exists()
        assert "OnCalendar=" in timer.read_text()
    repair = only("Deployment", "searchsync-repair")
    assert repair["spec"]["replicas"] == 1
    assert repair["spec"]["strategy"]["type"] == "Recreate"
    (c,) = repair["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["repair", "--daemon"]


def _toml_of(configmap: dict[str, Any], tmp_path: Path) -> Path:
    (key,) = configmap["data"]
    path = tmp_path / key
    path.write_text(configmap["data"][key])
    return path


def test_the_base_registers_no_demo_type(tmp_path: Path) -> None:
    """The base's settings name their modules explicitly (unset, they would be the demo's)."""
    settings = load_settings({}, _toml_of(only("ConfigMap"), tmp_path))
    assert registry_from_settings(settings.projection).types() == ("searchsync_canary",)
    assert all(doc["metadata"]["name"] != PROJECTORS_CONFIGMAP for _, doc in documents())


def _workloads(docs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(pod spec, container) of every container a workload of `docs` runs."""
    found = []
    for doc in docs:
        spec = kustomize_lite.pod_spec(doc)
        if spec is not None:
            found.extend((spec, c) for c in spec["containers"])
    return found


def test_the_pods_run_as_the_images_user() -> None:
    uid, _, gid = dockerfile.last("USER").partition(":")
    assert uid.isdigit() and int(uid) != 0
    for _, doc in documents():
        spec = kustomize_lite.pod_spec(doc)
        if spec is not None:
            assert spec["securityContext"]["runAsUser"] == int(uid), doc["metadata"]["name"]
            assert spec["securityContext"]["runAsNonRoot"] is True
            assert str(spec["securityContext"]["runAsGroup"]) == (gid or uid)


def test_the_image_exposes_the_consumers_metrics_port() -> None:
    exposed = {int(port.split("/")[0]) for port in dockerfile.last("EXPOSE").split()}
    assert int(env(container())[PORT_ENV]) in exposed


def test_projecting_workloads_mount_the_projectors_on_pythonpath() -> None:
    checked = 0
    for spec, c in _workloads([doc for _, doc in documents()]):
        if c["args"][0] not in PROJECTING_COMMANDS:
            continue
        volumes = {v["name"]: v for v in spec["volumes"]}
        (mount,) = [
            m
            for m in c["volumeMounts"]
            if volumes[m["name"]].get("configMap", {}).get("name") == PROJECTORS_CONFIGMAP
        ]
        assert volumes[mount["name"]]["configMap"]["optional"] is True  # the base runs without
        assert env(c)["PYTHONPATH"] == mount["mountPath"]
        checked += 1
    assert checked >= 2  # run and repair


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[p.name for p in OVERLAYS])
def test_every_overlay_renders_valid_documents_with_its_image(overlay: Path) -> None:
    rendered = kustomize_lite.build(overlay)
    applied = {
        (doc["kind"], doc["metadata"]["name"])
        for name, doc in documents()
        if name.split(":")[0] not in NOT_APPLIED
    }
    names = [(doc["kind"], doc["metadata"]["name"]) for doc in rendered]
    assert len(names) == len(set(names))
    assert set(names) - applied <= {("ConfigMap", PROJECTORS_CONFIGMAP)}
    assert applied <= set(names)
    for doc in rendered:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    images = {c["image"] for c in kustomize_lite.containers(rendered)}
    (image,) = images
    assert image.split(":")[0] != "searchsync" and ":" in image


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[p.name for p in OVERLAYS])
def test_every_overlay_registers_its_projectors_and_no_demo_type(
    overlay: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlay's searchsync.toml and its projector modules load as the pods load them: the
    ConfigMap searchsync-projectors as a directory on PYTHONPATH."""
    rendered = kustomize_lite.build(overlay)
    (projectors,) = [d for d in rendered if d["metadata"]["name"] == PROJECTORS_CONFIGMAP]
    on_path = tmp_path / "projectors"
    on_path.mkdir()
    for name, text in projectors["data"].items():
        (on_path / name).write_text(text)
        monkeypatch.delitem(sys.modules, name.removesuffix(".py"), raising=False)
    monkeypatch.syspath_prepend(str(on_path))
    (config,) = [d for d in rendered if d["metadata"]["name"] == "searchsync-config"]
    settings = load_settings({}, _toml_of(config, tmp_path))
    types = registry_from_settings(settings.projection).types()
    assert "wiki_page" not in types
    assert set(types) - {"searchsync_canary"}, f"{overlay.name} registers no type of its own"


def test_the_load_job_runs_one_part_per_completion_index() -> None:
    job = only("Job", "searchsync-load")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["podReplacementPolicy"] == "Failed"  # never two pods of one part at once
    (c,) = spec["template"]["spec"]["containers"]
    part = c["args"][c["args"].index("--part") + 1]
    assert (
        part == f"$(LOAD_PART)/{spec['completions']}" and spec["parallelism"] == spec["completions"]
    )
    index = env(c)["LOAD_PART"]["fieldRef"]["fieldPath"]
    assert index == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
