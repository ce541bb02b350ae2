"""vllm-platform: sized, autoscaling, observable vLLM fleets on Kubernetes, in Pulumi Python."""

__version__ = "0.1.0"  # the source tree's version; pyproject.toml's [project] version must equal it
