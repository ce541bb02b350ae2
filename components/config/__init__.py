"""Stack configuration: the typed schema and the one place it is read."""
from .load import ConfigError, LoadedConfig, config_keys, format_errors, load_stack_config, parse
from .schema import PROJECT, ModelDeployment, StackConfig

__all__ = ["ConfigError", "LoadedConfig", "config_keys", "format_errors", "load_stack_config", "parse",
           "PROJECT", "ModelDeployment", "StackConfig"]
