"""The provider's generation: the admitted inventory validated, the
provider's factory imported and its registry activated privately, as
upstream's catalogue module does it (the same names, and the same order
of steps in CandidateCatalogue.activate)."""

import dataclasses
import importlib
import threading
import types

from jsonschema import Draft202012Validator

from zeo_core.adapters.runtime_host.canonical import ProtocolError, digest, manifest_inventory
from zeo_core.contracts.runtime import ProviderBinding
from zeo_core.tools.invoke import BoundCapability
from zeo_core.tools.registry import CapabilityRegistry

__all__ = ["CandidateCatalogue", "Generation", "ProviderBinding", "installed_factory", "validate_inventory",
           "validate_schema"]


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


def validate_inventory(binding):
    """Checks the admitted inventory: distinct identities and projection
    names, every schema valid and every example valid against it, and
    the inventory digest the binding names."""
    identities, projections = set(), {}
    for manifest in binding.manifests:
        identity = manifest.id.canonical()
        if identity in identities:
            raise ProtocolError("a duplicate capability")
        identities.add(identity)
        if manifest.projection_name:
            if manifest.projection_name in projections:
                raise ProtocolError("a projection collision")
            projections[manifest.projection_name] = identity
        request = validate_schema(manifest.request_schema)
        response = validate_schema(manifest.response_schema)
        for example in manifest.examples:
            request.validate(example.request)
            if example.response is not None:
                response.validate(example.response)
    if digest(manifest_inventory(binding.manifests)) != binding.manifest_digest:
        raise ProtocolError("the inventory digest disagrees")


@dataclasses.dataclass(frozen=True)
class Generation:
    number: int
    capabilities: types.MappingProxyType
    manifest_digest: str


class CandidateCatalogue:
    """Activates one generation privately: the factory's registry is
    built, compared with the admitted inventory, and published only whole."""

    def __init__(self):
        self._lock = threading.Lock()
        self._active = None
        self._highest = 0

    def snapshot(self):
        with self._lock:
            return self._active

    def activate(self, binding, factory):
        validate_inventory(binding)
        candidate = factory()
        if not isinstance(candidate, CapabilityRegistry):
            # The stand-in lets a provider return a plain mapping of
            # functions (demo_provider); upstream requires the registry.
            candidate = CapabilityRegistry(candidate)
        declared = candidate.manifests()
        if declared is not None and digest(manifest_inventory(declared)) != binding.manifest_digest:
            raise ProtocolError("the provider's contributions disagree with the admitted inventory")
        capabilities = {}
        for manifest in binding.manifests:
            fn = candidate.get(manifest.id.name)
            if fn is None:
                continue
            cap = BoundCapability(definition=manifest, fn=fn, request_model=candidate.request_model(manifest.id.name))
            if cap.request_model is not None:
                if cap.request_model.model_json_schema() != manifest.request_schema:
                    raise ProtocolError("a request model disagrees with its manifest")
                for example in manifest.examples:
                    cap.request_model.model_validate(example.request)
            capabilities[manifest.id.canonical()] = cap
        generation = Generation(binding.generation, types.MappingProxyType(capabilities), binding.manifest_digest)
        with self._lock:
            if binding.generation <= self._highest:
                raise ProtocolError("a stale generation")
            self._active, self._highest = generation, binding.generation
        return generation

    def dispose(self, generation):
        with self._lock:
            if self._active is generation:
                self._active = None


def installed_factory(binding):
    """The provider's factory: its module is imported here, after the
    Runtime redeemed the bootstrap, never before. (Upstream also checks
    the interpreter's and the distribution's versions against the
    binding; the stand-in provider is no installed distribution.)"""
    module, _, attr = binding.factory.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    if not callable(factory):
        raise ProtocolError("the provider's factory is not callable")
    return factory
