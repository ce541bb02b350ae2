"""vllm-platform: sized, autoscaling, observable vLLM fleets on Kubernetes, in Pulumi Python."""
