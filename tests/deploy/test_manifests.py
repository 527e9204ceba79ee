"""The Kubernetes and KServe manifests: the core resources validate against the
Kubernetes API schemas (kubernetes-validate, strict), and the KServe ones, whose
CRD schemas that tool does not have, are checked field by field against each
other, the Deployment and the Dockerfile."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from service.settings import parse
from service.workers import STOP_GRACE_SECONDS

from .conftest import ROOT, load_docs, need_module

sys.path.insert(0, str(ROOT / "deploy" / "image"))
import replay  # noqa: E402

K8S = sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))
KSERVE = ROOT / "deploy" / "kserve" / "inferenceservice.yaml"
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")  # the oldest release still widely run, and the newest the tool knows


def by_kind(paths: list[Path]) -> dict[str, dict]:
    docs = [d for p in paths for d in load_docs(p)]
    kinds = {d["kind"]: d for d in docs}
    assert len(kinds) == len(docs), "one resource of each kind expected"
    return kinds


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", K8S, ids=lambda p: p.name)
def test_core_resources_validate(path, version):
    kv = need_module("kubernetes_validate")
    for doc in load_docs(path):
        kv.validate(doc, version, strict=True)  # raises ValidationError naming the field


def test_validation_catches_a_misspelled_field():
    kv = need_module("kubernetes_validate")
    deployment = by_kind(K8S)["Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["readinesProbe"] = container.pop("readinessProbe")
    with pytest.raises(kv.ValidationError, match="readinesProbe"):
        kv.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_deployment_fits_the_image_and_the_server():
    kinds = by_kind(K8S)
    deployment, service = kinds["Deployment"], kinds["Service"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    _, runtime = replay.stages()
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert str(port) == runtime.env["CONVT_PORT"] and str(port) in runtime.expose
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["resources"]["limits"]["nvidia.com/gpu"] >= 1
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert str(pod["securityContext"]["runAsUser"]) == runtime.user.split(":")[0]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    # the pod's grace period covers the preStop pause, the workers' drain of in-flight requests and their exit
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    drain = parse(container["args"]).shutdown_timeout_s
    assert pod["terminationGracePeriodSeconds"] >= pre_stop + drain + STOP_GRACE_SECONDS
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_inference_service_runs_our_image_over_v2():
    kinds = by_kind([KSERVE])
    isvc, runtime = kinds["InferenceService"], kinds["ServingRuntime"]
    assert isvc["apiVersion"] == "serving.kserve.io/v1beta1" and runtime["apiVersion"] == "serving.kserve.io/v1alpha1"
    model = isvc["spec"]["predictor"]["model"]
    assert model["protocolVersion"] == "v2" and "v2" in runtime["spec"]["protocolVersions"]
    assert model["runtime"] == runtime["metadata"]["name"]
    assert model["modelFormat"]["name"] in [f["name"] for f in runtime["spec"]["supportedModelFormats"]]
    assert int(model["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    settings = parse(model["args"])
    assert settings.model == isvc["metadata"]["name"]  # the v2 path /v2/models/<name> is the InferenceService's
    (container,) = runtime["spec"]["containers"]
    deployment = by_kind(K8S)["Deployment"]
    assert container["image"] == deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    env = {e["name"]: e["value"] for e in container["env"]}
    port = container["ports"][0]["containerPort"]
    assert port == 8080 and env["CONVT_PORT"] == str(port)  # KServe routes to 8080
    assert container["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": port}
    assert container["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": port}
    assert container["securityContext"]["runAsNonRoot"] is True
