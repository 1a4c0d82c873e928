"""Model clients behind one seam; see `agent.models.base`."""

from agent.models.base import (
    Capabilities,
    ModelClient,
    ModelReply,
    ModelRequest,
    ModelSettings,
    SupportsCapabilities,
    Usage,
    capabilities_of,
)
from agent.models.limits import default_max_tokens

__all__ = ["ModelClient", "ModelReply", "ModelRequest", "ModelSettings", "Usage", "Capabilities",
           "SupportsCapabilities", "capabilities_of", "default_max_tokens"]
