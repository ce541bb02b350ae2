"""vllm-platform: sized, autoscaling, observable vLLM fleets on Kubernetes, in Pulumi Python.

The library's entry points (docs/library.md), imported on first use so that the CLI's pure commands
(`topology`, `table`) do not load the Pulumi providers:

    from components import Platform, PlatformArgs, VllmService, VllmServiceArgs
"""

__version__ = "0.1.0"  # the package version (pyproject.toml reads it); see UPGRADING.md for what each release changes

_EXPORTS = {"Platform": "components.platform", "PlatformArgs": "components.library",
            "VllmService": "components.package", "VllmServiceArgs": "components.library",
            "StackConfig": "components.config", "cloud_provider_opts": "components.providers",
            "stack_output": "components.library"}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'components' has no attribute {name!r}")
