"""vLLM serving, one VllmService per planned model (service.py), split by concern: deployment.py
(single-node replica), shape.py (which workload), lws.py or rayservice.py + node_pod.py + fabric.py (multi-node
replica), autoscaling.py (KEDA),
network.py (Service, NetworkPolicy, PDB), observability.py.

Nothing is imported here: importing one serving module loads only what it needs (the pod layer is components/kube)."""
