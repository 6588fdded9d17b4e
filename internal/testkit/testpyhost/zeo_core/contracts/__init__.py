"""Capability contracts of the stand-in zeo_core: the capability manifest
and the result envelope, pydantic models built at import."""

from zeo_core.contracts.capabilities import (
    CapabilityEffects,
    CapabilityExample,
    CapabilityID,
    CapabilityManifest,
    CapabilityRequirements,
)
from zeo_core.contracts.envelopes import CapabilityOutcome, CapabilityResult

__all__ = ["CapabilityEffects", "CapabilityExample", "CapabilityID", "CapabilityManifest",
           "CapabilityOutcome", "CapabilityRequirements", "CapabilityResult"]
