"""Rules on the cloud resources: control-plane exposure, instance metadata, encryption at rest,
GKE private nodes and Workload Identity, GPU node pools tainted.

Property names are the serialized Pulumi inputs of pulumi-aws 7 / pulumi-gcp 10 (camelCase) and of
the Karpenter v1 CRDs (schemas/crds/karpenter)."""
from __future__ import annotations

from .core import MANDATORY, UNKNOWN, as_dict, as_list, get, is_false, is_true, known, rule
from .facts import ACCELERATOR_LABEL, GPU_TAINT_KEY, INSTANCE_TYPES, OPEN_CIDRS, POOL_LABEL

EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EC2_INSTANCE = "aws:ec2/instance:Instance"
EBS_VOLUME = "aws:ebs/volume:Volume"
EFS = "aws:efs/fileSystem:FileSystem"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODEPOOL = "gcp:container/nodePool:NodePool"
EC2_NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
KARPENTER_NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
STORAGECLASS = "kubernetes:storage.k8s.io/v1:StorageClass"

# OPEN_CIDRS (facts.py) come from components/config/bounds.py: the stack schema refuses them too.


@rule("cluster-endpoint-restricted", MANDATORY, {EKS_CLUSTER, GKE_CLUSTER},
      "The Kubernetes API endpoint is not open to the whole internet (EKS publicAccessCidrs, GKE "
      "master authorized networks).",
      "EKS: vpcConfig.publicAccessCidrs = [your CIDRs] or endpointPublicAccess false; GKE: "
      "masterAuthorizedNetworksConfig.cidrBlocks (gcpPublicCidrsAccessEnabled false) or a private endpoint")
def cluster_endpoint_restricted(resource_type, props):
    if resource_type == EKS_CLUSTER:
        vpc = as_dict(props.get("vpcConfig"))
        public, cidrs = vpc.get("endpointPublicAccess"), vpc.get("publicAccessCidrs")
        if is_false(public) or UNKNOWN in (public, cidrs):
            return
        if not as_list(cidrs):
            yield "public endpoint on and publicAccessCidrs unset (EKS defaults it to 0.0.0.0/0)"
        elif OPEN_CIDRS & set(as_list(cidrs)):
            yield f"public endpoint open to {', '.join(sorted(OPEN_CIDRS & set(cidrs)))}"
        return
    if is_true(get(props, "privateClusterConfig", "enablePrivateEndpoint")):
        return
    if is_false(get(props, "controlPlaneEndpointsConfig", "ipEndpointsConfig", "enabled")):
        return  # DNS endpoint only, guarded by IAM
    authorized = props.get("masterAuthorizedNetworksConfig")
    if authorized is None:
        yield "public endpoint with no masterAuthorizedNetworksConfig accepts any address"
        return
    blocks = {get(b, "cidrBlock") for b in as_list(get(authorized, "cidrBlocks"))}
    if OPEN_CIDRS & blocks:
        yield f"master authorized networks include {', '.join(sorted(OPEN_CIDRS & blocks))}"
    # Every Compute Engine public IP, so any VM in any project, passes the authorized networks.
    if is_true(get(authorized, "gcpPublicCidrsAccessEnabled")):
        yield "masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled admits every Google Cloud public IP"


def _imds_problem(options) -> str | None:
    options = as_dict(options)
    tokens = options.get("httpTokens")
    if options.get("httpEndpoint") == "disabled" or tokens in ("required", UNKNOWN):
        return None  # IMDSv2 only, or no metadata service at all
    if tokens is None:
        return "metadataOptions.httpTokens unset (EC2 defaults it to optional: IMDSv1 on)"
    return f"metadataOptions.httpTokens is {tokens!r}"


@rule("imdsv2-required", MANDATORY, {LAUNCH_TEMPLATE, EC2_INSTANCE, EC2_NODECLASS},
      "Nodes require IMDSv2 session tokens, so a pod cannot read the node role's credentials with a "
      "plain GET (SSRF).",
      "set metadataOptions.httpTokens = required (httpPutResponseHopLimit 1 also keeps pods off IMDS)")
def imdsv2_required(resource_type, props):
    if resource_type == EC2_NODECLASS:
        tokens = get(props, "spec", "metadataOptions", "httpTokens")
        if tokens == "optional":  # Karpenter's default is required
            yield "spec.metadataOptions.httpTokens is 'optional'"
        return
    problem = _imds_problem(props.get("metadataOptions"))
    if problem:
        yield problem


def _unencrypted(value) -> bool:
    """Unset counts as unencrypted: it falls back to an account default the stack does not control."""
    return value != UNKNOWN and not is_true(value)


def _ebs_unencrypted(mappings, where: str):
    for i, m in enumerate(as_list(mappings)):
        ebs = get(m, "ebs")
        if isinstance(ebs, dict) and _unencrypted(ebs.get("encrypted")):
            yield f"{where}[{i}] ({get(m, 'deviceName') or 'volume'}): ebs.encrypted is not true"


@rule("storage-encrypted", MANDATORY,
      {EFS, LAUNCH_TEMPLATE, EC2_INSTANCE, EBS_VOLUME, EC2_NODECLASS, STORAGECLASS},
      "Storage that holds weights, caches or node disks is encrypted at rest (EFS, EBS, node volumes).",
      "set encrypted: true (and kmsKeyId for a customer key); EBS CSI StorageClasses: parameters.encrypted 'true'")
def storage_encrypted(resource_type, props):
    if resource_type in (EFS, EBS_VOLUME):
        if _unencrypted(props.get("encrypted")):
            yield "encrypted is not true"
    elif resource_type == LAUNCH_TEMPLATE:
        yield from _ebs_unencrypted(props.get("blockDeviceMappings"), "blockDeviceMappings")
    elif resource_type == EC2_NODECLASS:
        yield from _ebs_unencrypted(get(props, "spec", "blockDeviceMappings"), "spec.blockDeviceMappings")
    elif resource_type == EC2_INSTANCE:
        if _unencrypted(get(props, "rootBlockDevice", "encrypted")):
            yield "rootBlockDevice.encrypted is not true"
        for i, d in enumerate(as_list(props.get("ebsBlockDevices"))):
            if _unencrypted(get(d, "encrypted")):
                yield f"ebsBlockDevices[{i}].encrypted is not true"
    elif resource_type == STORAGECLASS and props.get("provisioner") == "ebs.csi.aws.com":
        if _unencrypted(get(props, "parameters", "encrypted")):
            yield "EBS CSI StorageClass without parameters.encrypted 'true'"


@rule("gke-private-nodes", MANDATORY, {GKE_CLUSTER, GKE_NODEPOOL},
      "GKE nodes have internal IP addresses only.",
      "set privateClusterConfig.enablePrivateNodes = true (and never networkConfig.enablePrivateNodes = false "
      "on a node pool); reach the internet through Cloud NAT")
def gke_private_nodes(resource_type, props):
    if resource_type == GKE_CLUSTER:
        private = get(props, "privateClusterConfig", "enablePrivateNodes")
        if private != UNKNOWN and not is_true(private):
            yield "privateClusterConfig.enablePrivateNodes is not true (nodes get public IPs)"
    elif is_false(get(props, "networkConfig", "enablePrivateNodes")):
        yield "networkConfig.enablePrivateNodes is false (this pool's nodes get public IPs)"


def _metadata_mode_problem(node_config, where: str):
    mode = get(node_config, "workloadMetadataConfig", "mode")
    if known(mode) and mode != "GKE_METADATA":
        yield f"{where}.workloadMetadataConfig.mode is {mode!r}: pods can read the node's service account"


@rule("gke-workload-identity", MANDATORY, {GKE_CLUSTER, GKE_NODEPOOL},
      "GKE uses Workload Identity: the cluster has a workload pool and no node pool exposes the node's "
      "metadata server to pods.",
      "set workloadIdentityConfig.workloadPool = '<project>.svc.id.goog' and leave workloadMetadataConfig.mode "
      "GKE_METADATA")
def gke_workload_identity(resource_type, props):
    if resource_type == GKE_CLUSTER:
        pool = get(props, "workloadIdentityConfig", "workloadPool")
        if not pool:
            yield "workloadIdentityConfig.workloadPool is unset (Workload Identity off)"
    yield from _metadata_mode_problem(props.get("nodeConfig"), "nodeConfig")


def _effect(value) -> str:
    return str(value).replace("_", "").lower()


def _has_gpu_taint(taints) -> bool:
    """The taint the GPU Operator's DaemonSets and our serving pods tolerate (nvidia.com/gpu)."""
    return any(get(t, "key") == GPU_TAINT_KEY and _effect(get(t, "effect")) in ("noschedule", "noexecute")
               for t in as_list(taints))


def _gpu_instance(name) -> bool:
    i = INSTANCE_TYPES.get(name) if isinstance(name, str) else None
    return i is not None and i.gpus > 0


_GPU_LABELS = (POOL_LABEL, ACCELERATOR_LABEL, "nvidia.com/gpu.present")


def _is_gpu_pool(resource_type: str, props: dict) -> bool:
    if resource_type == EKS_NODEGROUP:
        ami = str(props.get("amiType") or "").upper()
        return ("NVIDIA" in ami or "GPU" in ami or any(map(_gpu_instance, as_list(props.get("instanceTypes"))))
                or any(k in as_dict(props.get("labels")) for k in _GPU_LABELS))
    if resource_type == GKE_NODEPOOL:
        node = as_dict(props.get("nodeConfig"))
        return (bool(as_list(node.get("guestAccelerators"))) or _gpu_instance(node.get("machineType"))
                or any(k in as_dict(node.get("labels")) for k in _GPU_LABELS))
    spec = as_dict(get(props, "spec", "template", "spec"))
    for req in as_list(spec.get("requirements")):
        key = get(req, "key")
        if key in ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-name",
                   "karpenter.k8s.aws/instance-gpu-manufacturer"):
            return True
        if key == "node.kubernetes.io/instance-type" and any(map(_gpu_instance, as_list(get(req, "values")))):
            return True
    return any(k in as_dict(get(props, "spec", "template", "metadata", "labels")) for k in _GPU_LABELS)


_TAINT_PATHS = {EKS_NODEGROUP: ("taints",), GKE_NODEPOOL: ("nodeConfig", "taints"),
                KARPENTER_NODEPOOL: ("spec", "template", "spec", "taints")}


@rule("gpu-nodes-tainted", MANDATORY, set(_TAINT_PATHS),
      f"GPU node pools carry the {GPU_TAINT_KEY} NoSchedule taint, so only pods that ask for GPUs land "
      "there (GKE adds it only when the cluster has a non-GPU pool).",
      f"add taint {{key: {GPU_TAINT_KEY}, value: present, effect: NO_SCHEDULE}} (Karpenter: NoSchedule)")
def gpu_nodes_tainted(resource_type, props):
    if not _is_gpu_pool(resource_type, props):
        return
    taints = get(props, *_TAINT_PATHS[resource_type])
    if taints != UNKNOWN and not _has_gpu_taint(taints):
        yield f"GPU node pool without a {GPU_TAINT_KEY} NoSchedule/NoExecute taint"
