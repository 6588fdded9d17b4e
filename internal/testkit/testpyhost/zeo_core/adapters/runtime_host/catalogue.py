"""The provider's factory, imported only after bootstrap, and the
schemas its manifests declare."""

import importlib

from jsonschema import Draft202012Validator

from zeo_core.adapters.runtime_host.canonical import ProtocolError
from zeo_core.tools.registry import CapabilityRegistry


def validate_schema(schema):
    """A validator of schema; references outside it are refused."""
    Draft202012Validator.check_schema(schema)

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("$ref", "$dynamicRef") and not (isinstance(x, str) and x.startswith("#")):
                    raise ProtocolError("an external schema reference")
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(schema)
    return Draft202012Validator(schema)


def installed_factory(binding):
    """The provider's registry: its module is imported here, after the
    Runtime redeemed the bootstrap, never before."""
    module, _, attr = binding.factory.partition(":")
    made = getattr(importlib.import_module(module), attr)()
    return made if isinstance(made, CapabilityRegistry) else CapabilityRegistry(made)
