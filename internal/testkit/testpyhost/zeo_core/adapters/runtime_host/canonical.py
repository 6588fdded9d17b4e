"""Canonical bytes, digests and the manifest projection of the wire."""

import hashlib
import json

import rfc8785

MAX_BYTES = 1 << 20


class ProtocolError(ValueError):
    """The wire broke the protocol."""


class InvalidRequestError(ProtocolError):
    """The caller's command or request is invalid."""


def canonical_bytes(v):
    try:
        return rfc8785.dumps(v)
    except (ValueError, TypeError, RecursionError) as e:
        raise ProtocolError("outside the canonical JSON domain") from e


def digest(v):
    return "sha256:" + hashlib.sha256(canonical_bytes(v)).hexdigest()


def parse_json(raw, limit=MAX_BYTES):
    if not raw or len(raw) > limit:
        raise ProtocolError("empty or oversized JSON")

    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise ProtocolError("duplicate key")
            out[k] = v
        return out

    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=pairs)
    except (ValueError, UnicodeError, RecursionError) as e:
        raise ProtocolError("invalid JSON") from e


_SETS = (("error_codes",), ("tags",), ("effects", "kinds"), ("requirements", "services"),
         ("requirements", "credentials"), ("requirements", "binaries"), ("requirements", "network", "hosts"))


def capability_id(m):
    i = m["id"]
    return "%s.%s@%s" % (i["namespace"], i["name"], i["version"])


def manifest_inventory(manifests):
    """The manifests as hashed: ordered by identity, each set sorted."""
    out = []
    dumped = [m.model_dump(mode="json") if hasattr(m, "model_dump") else json.loads(json.dumps(m)) for m in manifests]
    for m in sorted(dumped, key=capability_id):
        for path in _SETS:
            node = m
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = sorted(node[path[-1]])
        out.append(m)
    return out
