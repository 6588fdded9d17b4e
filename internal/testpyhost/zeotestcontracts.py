"""The test host's contracts: pydantic models and JSON helpers, a trusted
host dependency (a zygote may preload it), never provider code."""

import hashlib
import json

import jsonschema
from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class AttemptBinding(Strict):
    organization_id: str = Field(min_length=1, max_length=256)
    project_id: str = Field(min_length=1, max_length=256)
    seat_id: str = Field(min_length=1, max_length=256)
    runtime_binding_id: str = Field(min_length=1, max_length=256)
    packet_id: str = Field(min_length=1, max_length=256)
    operation_id: str = Field(min_length=1, max_length=256)
    attempt_id: str = Field(min_length=1, max_length=256)
    fencing_generation: int = Field(ge=1)
    capability_id: str
    request_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    manifest_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")


class InvocationRequest(Strict):
    protocol_version: int
    capability_id: str
    arguments: dict


class RuntimeReply(Strict):
    protocol_version: int
    sequence: int
    host_nonce: str
    binding: AttemptBinding
    request_digest: str
    state: str
    data: dict = {}


def canonical(v):
    """Canonical JSON of simple values (no floats)."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(v):
    return "sha256:" + hashlib.sha256(canonical(v)).hexdigest()


_SETS = (("error_codes",), ("tags",), ("effects", "kinds"), ("requirements", "services"),
         ("requirements", "credentials"), ("requirements", "binaries"), ("requirements", "network", "hosts"))


def capability_id(m):
    i = m["id"]
    return "%s.%s@%s" % (i["namespace"], i["name"], i["version"])


def projection(manifests):
    out = []
    for m in sorted(manifests, key=capability_id):
        m = json.loads(json.dumps(m))
        for path in _SETS:
            node = m
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = sorted(node[path[-1]])
        out.append(m)
    return out


def validate(schema, instance):
    """Validates instance and returns it with the top-level defaults."""
    jsonschema.Draft202012Validator(schema).validate(instance)
    out = dict(instance)
    for k, p in schema.get("properties", {}).items():
        if k not in out and "default" in p:
            out[k] = p["default"]
    return out
