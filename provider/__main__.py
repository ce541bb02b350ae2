"""The vllm-platform component provider: hosts Platform and VllmService (components/package.py).

The engine runs this with the plugin directory's virtualenv (requirements.txt installs the project from
the directory above, so the pins stay those of pyproject.toml). The schema is inferred from the
components' annotations: tests/test_component_package.py generates it in-process.
"""
from pulumi.provider.experimental import component_provider_host

from components.package import COMPONENTS, PACKAGE, VERSION

if __name__ == "__main__":
    component_provider_host(COMPONENTS, name=PACKAGE, version=VERSION)
