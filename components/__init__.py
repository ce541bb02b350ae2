"""vllm-platform: sized, autoscaling, observable vLLM fleets on Kubernetes, in Pulumi Python."""

__version__ = "0.1.0"  # the package version (pyproject.toml reads it); see UPGRADING.md for what each release changes
