"""The first drain must not take Prometheus down (issue 36): its 50 Gi EBS volume is zonal, and Cluster Autoscaler
cannot ask one Auto Scaling group spanning three zones for a node in a given zone. One system node group per zone,
balanced by Cluster Autoscaler, gives a pod bound to its volume's zone a node there."""
from components.cluster.aws.autoscaling import autoscaler_values
from components.costs import bill
from tests.cluster.aws.test_capacity import subnet_ids
from tests.support.aws import G6, NG
from tests.support.plans import by_type, plan_config


def system_groups(res):
    return {r.name: r for r in by_type(res, NG) if "-system-" in r.name}


def test_one_system_group_per_zone_each_in_its_zones_subnet_only():
    res, _ = plan_config(G6)
    groups, subnets = system_groups(res), subnet_ids(res)
    zones = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    assert sorted(groups) == [f"vllm-cluster-nodes-system-{z}" for z in zones]
    for z in zones:
        assert groups[f"vllm-cluster-nodes-system-{z}"].inputs["subnetIds"] == [subnets[z]]



def test_each_zone_group_carries_the_ebs_csi_zone_label_cluster_autoscaler_needs_to_scale_it_from_zero():
    """Prometheus's EBS volume binds it to one zone by a term of two keys (topology.ebs.csi.aws.com/zone and
    topology.kubernetes.io/zone); a zone group at 0 nodes is scaled up by Cluster Autoscaler only if its template
    node carries both (kubernetes/autoscaler#3845). With systemNodes 2 one zone's group sits at 0."""
    res, _ = plan_config(G6)
    for name, group in system_groups(res).items():
        zone = name.rsplit("-system-", 1)[1]
        assert group.inputs["labels"]["topology.ebs.csi.aws.com/zone"] == zone

def test_system_nodes_stay_the_total_minimum_spread_over_the_zones_with_one_spare_each():
    """aws.systemNodes 2 over 3 zones: 1, 1, 0 (the bill still counts 2); every zone may grow by one, so that the
    zone of Prometheus's volume gets a node when its own is drained, even the zone that starts at 0."""
    res, _ = plan_config(G6)
    sizes = {n.rsplit("-", 1)[-1]: g.inputs["scalingConfig"] for n, g in system_groups(res).items()}
    assert sizes == {"1a": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
                     "1b": {"minSize": 1, "desiredSize": 1, "maxSize": 2},
                     "1c": {"minSize": 0, "desiredSize": 0, "maxSize": 1}}
    res, _ = plan_config({**G6, "aws": {**G6["aws"], "systemNodes": 4}})
    groups = system_groups(res)
    assert [groups[n].inputs["scalingConfig"]["minSize"] for n in sorted(groups)] == [2, 1, 1]


def test_the_bill_counts_the_configured_total_of_system_nodes():
    cfg = {**G6, "aws": {**G6["aws"], "systemNodes": 4}}
    res, _ = plan_config(cfg)
    assert sum(g.inputs["scalingConfig"]["minSize"] for g in system_groups(res).values()) == 4
    assert "_node_line(cfg, \"system nodes\", a.system_instance_type, a.system_nodes)" in \
        open(bill.__file__).read()


def test_the_first_zones_group_takes_over_the_address_of_the_single_group_of_earlier_releases(monkeypatch):
    """An alias (same parent, the old name): `pulumi up` of a deployed stack replaces the old group by the first
    zone's (created first, the old one drained and deleted after), instead of an unrelated delete."""
    from components.offline import runner
    aliases: dict[str, list] = {}

    class Monitor(runner.RecordingMonitor):
        def RegisterResource(self, request):
            aliases[request.name] = [(a.spec.name, a.spec.parentUrn, a.spec.noParent) for a in request.aliases]
            return super().RegisterResource(request)

    monkeypatch.setattr(runner, "RecordingMonitor", Monitor)
    plan_config(G6)
    assert aliases["vllm-cluster-nodes-system-eu-west-1a"] == [("vllm-cluster-nodes-system", "", False)]
    assert aliases["vllm-cluster-nodes-system-eu-west-1b"] == aliases["vllm-cluster-nodes-system-eu-west-1c"] == []


def test_cluster_autoscaler_balances_similar_groups():
    assert autoscaler_values("c", "us-east-1", "1.35")["extraArgs"]["balance-similar-node-groups"] is True


def test_the_first_zones_group_sends_the_old_system_groups_live_size_within_its_new_bounds(monkeypatch):
    """Upgrade from the single system group: the aliased first-zone group is read under the old group's live name,
    so its bounds change is seen and the live size (4, above the new max 2) is sent clamped, not ignored (the
    engine would otherwise copy the old stored desired size in, and EKS refuses desired > max)."""
    import components.offline.aws_stubs as stubs
    monkeypatch.setitem(stubs.EXISTING_CLUSTERS, "vllm", {"version": "1.35", "tags": {}})
    monkeypatch.setitem(stubs.EXISTING_NODE_GROUPS, "vllm", {
        "vllm-cluster-nodes-system-0a1b2c3": {"minSize": 2, "desiredSize": 4, "maxSize": 4}})
    res, _ = plan_config(G6)
    first = system_groups(res)["vllm-cluster-nodes-system-eu-west-1a"]
    scaling = first.inputs["scalingConfig"]
    assert scaling["desiredSize"] <= scaling["maxSize"] == 2
    assert first.ignore_changes == ()
