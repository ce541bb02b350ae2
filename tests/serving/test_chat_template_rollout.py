"""An inline chat template is read by vLLM once at start: its hash on the Deployment's pod template makes an
edited template roll the pods (the ConfigMap alone would not)."""
import kubernetes_validate

from tests.support.plans import manifests, plan_config

EXISTING = {"cloud": "existing", "namespace": "llm",
            "existing": {"gpuNodes": {"accelerator": "h100", "gpusPerNode": 8, "vcpu": 96, "ramGib": 1000},
                         "blockStorageClass": "fast-block"},
            "modelCache": {"storageClass": "nfs-client"}}


def pod_annotations(template: dict | None) -> dict:
    engine = {"chatTemplate": template} if template else {}
    resources, _ = plan_config({**EXISTING, "models": [
        {"name": "chat", "model": "qwen3-32b", "maxModelLen": 8192, "engine": engine}]})
    objs = manifests(resources)
    dep = next(o for o in objs.values() if o["kind"] == "Deployment" and o["metadata"]["name"] == "chat")
    kubernetes_validate.validate(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
         "spec": {"selector": {"matchLabels": {"a": "b"}},
                  "template": {"metadata": {**dep["spec"]["template"]["metadata"], "labels": {"a": "b"}},
                               "spec": {"containers": [{"name": "c", "image": "i"}]}}}}, "1.34", strict=True)
    return dep["spec"]["template"]["metadata"].get("annotations", {})


def test_an_inline_template_change_changes_the_pod_template():
    first = pod_annotations({"inline": "{{ messages[0].content }}"})
    assert first["vllm-platform/chat-template-sha256"] == \
        "21b1d9c74a217211f93d54eca585c322017b9008d86619712ec946b10cf156f1"
    edited = pod_annotations({"inline": "{{ messages[-1].content }}"})
    assert edited["vllm-platform/chat-template-sha256"] != first["vllm-platform/chat-template-sha256"]
    assert "vllm-platform/chat-template-sha256" not in pod_annotations(None)
