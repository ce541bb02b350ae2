"""The facts the planner works from: models, accelerators and instance types, each with its source."""
from .accelerators import ACCELERATORS, Accelerator
from .instances import INSTANCE_TYPES, MIN_FABRIC_GBPS, PRICES_AS_OF, InstanceType, instance_types, offered
from .models import MODELS, PRECISIONS, ModelSpec, closest_models, find_model, names_fp8

__all__ = [
    "ACCELERATORS", "Accelerator", "INSTANCE_TYPES", "MIN_FABRIC_GBPS", "PRICES_AS_OF",
    "InstanceType", "instance_types", "offered", "MODELS", "PRECISIONS", "ModelSpec", "closest_models", "find_model",
    "names_fp8",
]
