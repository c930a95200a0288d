"""deploy/: the Kubernetes manifest validates against Kubernetes' own schemas (kubernetes-validate, offline, strict:
an unknown field fails), its probes are the service's health paths, its container flags are `zstc serve` flags, and
the grace period covers the shutdown delay and the drain."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _documents() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text(encoding="utf-8")) if doc]


def test_the_manifest_validates_and_a_typo_does_not() -> None:
    version = kubernetes_validate.latest_version()
    documents = _documents()
    assert {doc["kind"] for doc in documents} == {"Deployment", "Service", "HorizontalPodAutoscaler"}
    for doc in documents:
        kubernetes_validate.validate(doc, version, strict=True)
    typo = copy.deepcopy(next(doc for doc in documents if doc["kind"] == "Deployment"))
    typo["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {"path": "/health/ready"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, version, strict=True)


def test_the_deployment_probes_the_health_paths_with_serve_flags_and_grace_for_the_drain() -> None:
    import typer

    from zstc.cli import app as cli_app

    pod = next(doc for doc in _documents() if doc["kind"] == "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["startupProbe"]["httpGet"]["path"] == container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert container["resources"]["requests"]
    args = container["args"]
    serve = typer.main.get_command(cli_app).commands["serve"]  # type: ignore[attr-defined]  # the zstc group's
    flags = {option for param in serve.params for option in param.opts}
    assert args[0] == "serve" and {arg for arg in args[1:] if arg.startswith("--")} <= flags
    delay, drain = (float(args[args.index(flag) + 1]) for flag in ("--shutdown-delay", "--drain-timeout"))
    assert pod["terminationGracePeriodSeconds"] > delay + drain
    hpa = next(doc for doc in _documents() if doc["kind"] == "HorizontalPodAutoscaler")
    from zstc.server.telemetry import Telemetry

    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    assert f"\n{metric} " in Telemetry().render().decode()  # the queue depth the server exports
