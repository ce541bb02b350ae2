"""vllm-platform: sized, autoscaling, observable vLLM fleets on Kubernetes, in Pulumi Python."""

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)
