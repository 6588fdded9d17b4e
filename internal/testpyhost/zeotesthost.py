"""A Python test host: speaks the ZEO runtime host protocol far enough to
bootstrap, run a capability of demo_provider (echo, hang, fail) and
publish, as `python -m zeotesthost invoke --request - --context-fd 3
--runtime-fd 4`. Standard library, pydantic and jsonschema only."""

import importlib
import json
import os
import secrets
import socket
import struct
import sys
import time

import zeotestcontracts as c

EXIT = {"succeeded": 0, "invalid_request": 2, "refused": 3, "unavailable": 4, "failed": 5,
        "cancelled": 6, "timed_out": 7, "protocol_error": 8, "waiting_approval": 10,
        "needs_reconciliation": 10}


class End(Exception):
    def __init__(self, state, code=None):
        super().__init__(state)
        self.state, self.code = state, code


class Channel:
    def __init__(self, sock, ctx, binding, nonce):
        self.sock, self.ctx, self.binding, self.nonce = sock, ctx, binding, nonce
        self.sequence = 0

    def call(self, method, payload):
        self.sequence += 1
        body = c.canonical({"binding": self.binding, "host_nonce": self.nonce, "method": method,
                            "payload": payload, "protocol_version": 1, "sequence": self.sequence})
        remaining = self.ctx["deadline_unix_ms"] / 1000 - time.time()
        if remaining <= 0:
            raise End("protocol_error", "ZEO_HOST_PROTOCOL")
        self.sock.settimeout(min(remaining, self.ctx.get("rpc_timeout_ms", 5000) / 1000))
        self.sock.sendall(struct.pack(">I", len(body)) + body)
        n = struct.unpack(">I", self.recv(4))[0]
        if n == 0 or n > self.ctx.get("max_message_bytes", 1 << 20):
            raise End("protocol_error", "ZEO_HOST_PROTOCOL")
        reply = c.RuntimeReply.model_validate_json(self.recv(n))
        if (reply.sequence != self.sequence or reply.host_nonce != self.nonce
                or reply.binding.model_dump() != self.binding
                or reply.request_digest != "sha256:" + __import__("hashlib").sha256(body).hexdigest()):
            raise End("protocol_error", "ZEO_HOST_PROTOCOL")
        if reply.state != "allowed":
            raise End(reply.state, "ZEO_HOST_REFUSED" if reply.state == "refused" else None)
        return reply.data

    def recv(self, n):
        b = b""
        while len(b) < n:
            chunk = self.sock.recv(n - len(b))
            if not chunk:
                raise End("protocol_error", "ZEO_HOST_PROTOCOL")
            b += chunk
        return b


def invoke(ctx, request, sock):
    binding = c.AttemptBinding.model_validate(ctx["attempt"]).model_dump()
    req = c.InvocationRequest.model_validate(request)
    if req.capability_id != binding["capability_id"] or req.capability_id not in ctx["admitted_capabilities"]:
        raise End("refused", "ZEO_HOST_SCOPE")
    hashed = json.loads(json.dumps(ctx))
    hashed["provider"]["manifests"] = c.projection(ctx["provider"]["manifests"])
    ch = Channel(sock, ctx, binding, os.environ.get("ZEO_TESTHOST_NONCE") or secrets.token_hex(32))
    ch.call("bootstrap", {"bootstrap_id": ctx["bootstrap_id"], "launch_digest": c.digest(hashed), "pid": os.getpid()})
    module, _, attr = ctx["provider"]["factory"].partition(":")
    registry = getattr(importlib.import_module(module), attr)()
    manifest = next((m for m in ctx["provider"]["manifests"] if c.capability_id(m) == req.capability_id), None)
    if manifest is None or manifest["id"]["name"] not in registry:
        raise End("protocol_error", "ZEO_HOST_PROTOCOL")
    try:
        args = c.validate(manifest["request_schema"], req.arguments)
    except Exception:  # noqa: BLE001
        raise End("invalid_request", "ZEO_HOST_INVALID_REQUEST")
    if c.digest({"capability_id": req.capability_id, "arguments": args}) != binding["request_digest"]:
        raise End("refused", "ZEO_HOST_REQUEST_BINDING")
    ch.call("invoke.admit", {"arguments": args})
    try:
        data = registry[manifest["id"]["name"]](args)
    except Exception as e:  # noqa: BLE001
        raise End("failed", str(e))
    reply = ch.call("result.publish", {"data": data, "data_digest": c.digest(data)})
    if reply.get("data_digest") != c.digest(data) or not reply.get("artifact_refs"):
        raise End("protocol_error", "ZEO_HOST_PROTOCOL")
    return reply["artifact_refs"], binding


def main():
    out = os.dup(1)
    if sys.argv[1:] != ["invoke", "--request", "-", "--context-fd", "3", "--runtime-fd", "4"]:
        result, binding, refs = End("invalid_request", "ZEO_HOST_INVALID_REQUEST"), None, []
    else:
        with os.fdopen(os.dup(3), "rb") as f:
            ctx = json.loads(f.read())
        request = json.loads(sys.stdin.buffer.read())
        sock = socket.socket(fileno=os.dup(4))
        binding, refs, result = ctx["attempt"], [], End("succeeded")
        try:
            refs, binding = invoke(ctx, request, sock)
        except End as e:
            result = e
        except Exception:  # noqa: BLE001
            result = End("protocol_error", "ZEO_HOST_PROTOCOL")
        sock.close()
    line = c.canonical({"artifact_refs": refs, "binding": binding, "data": None,
                        "effect_disposition": "none", "error_code": result.code, "protocol_version": 1,
                        "state": result.state}) + b"\n"
    os.write(out, line)
    sys.exit(EXIT[result.state])


if __name__ == "__main__":
    main()
