"""The stand-in host's trusted dependencies under one name, for tests that
list their own preload: importing it imports what the host
(zeo_core.adapters.runtime_host) imports from outside its own package,
never host or provider code."""

import jsonschema  # noqa: F401
import pydantic  # noqa: F401
import rfc8785  # noqa: F401

import zeo_core.contracts.runtime  # noqa: F401
import zeo_core.core.managed_execution  # noqa: F401
import zeo_core.tools  # noqa: F401
import zeo_core.tools.invoke  # noqa: F401
