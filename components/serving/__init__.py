"""vLLM serving, one VllmService per planned model (service.py), split by concern: deployment.py
(single-node replica), shape.py (which workload), lws.py or rayservice.py + node_pod.py + fabric.py (multi-node
replica), autoscaling.py (KEDA),
probes.py (start-up budget), network.py (Service, NetworkPolicy, PDB), observability.py.

Nothing is imported here so that components.cache can use serving.pods without a cycle."""
