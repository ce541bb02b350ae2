"""The inference gateway (docs/gateway.md): InferenceGateway takes GatewayArgs; objects.py holds the specs."""
from .component import GatewayArgs, InferenceGateway
from .objects import ModelRoute

__all__ = ["GatewayArgs", "InferenceGateway", "ModelRoute"]
