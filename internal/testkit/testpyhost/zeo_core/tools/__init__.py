"""The tool authoring surface of the stand-in zeo_core."""

from zeo_core.tools.context import ToolContext
from zeo_core.tools.registry import CapabilityRegistry

__all__ = ["CapabilityRegistry", "ToolContext"]
