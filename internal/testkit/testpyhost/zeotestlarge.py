"""A large stand-in provider (factory zeotestlarge:factory): tens of
capabilities whose request models are deep pydantic models with large
JSON schemas and many examples, so that what a host does per generation
(validating the inventory, importing the provider, activating its
registry) costs real work, as for a large real provider. Importing it
builds every model; manifests() says what it declares, which the tests
admit. Each capability echoes its text."""

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from zeo_core.contracts.capabilities import CapabilityManifest
from zeo_core.tools.registry import CapabilityRegistry

# ZEO_TESTLARGE_CAPABILITIES makes it smaller, for tests that need its
# shape, not its size.
CAPABILITIES = int(os.environ.get("ZEO_TESTLARGE_CAPABILITIES", "30"))
SECTIONS = 5
FIELDS = 10
NAMESPACE = "large"


def _section(cap, s):
    fields = {}
    for f in range(FIELDS):
        kind = (cap + s + f) % 5
        if kind == 0:
            fields["label_%d" % f] = (str, Field(default="x", min_length=1, max_length=64, pattern=r"^[a-z0-9_-]+$",
                                                 description="label %d of section %d" % (f, s)))
        elif kind == 1:
            fields["count_%d" % f] = (int, Field(default=1, ge=0, le=10_000, description="a bounded count"))
        elif kind == 2:
            fields["percent_%d" % f] = (int, Field(default=50, ge=0, le=100, description="a percentage"))
        elif kind == 3:
            fields["mode_%d" % f] = (Literal["fast", "careful", "exhaustive", "dry_run"],
                                     Field(default="careful", description="how to proceed"))
        else:
            fields["tags_%d" % f] = (list[str], Field(default_factory=list, max_length=16, description="tags"))
    return create_model("Cap%dSection%d" % (cap, s), __config__=ConfigDict(extra="forbid"), **fields)


def _capability(cap):
    sections = {"section_%d" % s: (_section(cap, s) | None, None) for s in range(SECTIONS)}
    options = create_model("Cap%dOptions" % cap, __config__=ConfigDict(extra="forbid"), **sections)
    request = create_model("Cap%dRequest" % cap, __config__=ConfigDict(extra="forbid"), text=(str, ...),
                           options=(options | None, None))
    response = create_model("Cap%dResponse" % cap, text=(str, ...), capability=(str, ...))
    full = {"section_%d" % s: {} for s in range(SECTIONS)}
    examples = [{"request": {"text": "example %d" % i, "options": full if i % 2 else None}} for i in range(6)]
    manifest = CapabilityManifest(
        schema_version="1.0",
        id={"namespace": NAMESPACE, "name": "cap_%02d" % cap, "version": "1.0.0"},
        description="Large stand-in capability %d." % cap,
        request_schema=request.model_json_schema(),
        response_schema=response.model_json_schema(),
        examples=examples,
        effects={"kinds": ["read"], "concurrency": "parallel_safe"},
        tags=["large", "standin"],
    )
    return manifest, request


_BUILT = [_capability(c) for c in range(CAPABILITIES)]


def manifests():
    """The declared manifests, as JSON objects."""
    return [m.model_dump(mode="json") for m, _ in _BUILT]


def _echo(name):
    def run(args, ctx):
        return {"text": args["text"], "capability": name}
    return run


def factory():
    names = [m.id.name for m, _ in _BUILT]
    return CapabilityRegistry({n: _echo(n) for n in names}, manifests=[m for m, _ in _BUILT],
                              request_models={m.id.name: r for m, r in _BUILT})


__all__ = ["BaseModel", "factory", "manifests"]
