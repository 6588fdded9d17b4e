"""A stand-in of zeocore's zeo_core package for the tests of warm launch:
the same module layout (zeo_core.contracts, zeo_core.contracts.runtime,
zeo_core.tools, zeo_core.core.managed_execution and the host
zeo_core.adapters.runtime_host), the same import-time work (pydantic
models built at import) and the same order (the provider imported after
bootstrap only). It is test code, never a real distribution.

As upstream's, the package root re-exports the tool authoring surface."""

from zeo_core.contracts import CapabilityResult
from zeo_core.tools import CapabilityRegistry, ToolContext

__all__ = ["CapabilityRegistry", "CapabilityResult", "ToolContext"]
