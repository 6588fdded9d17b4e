"""Request and reply with the Runtime on the inherited socket."""

import hashlib
import os
import secrets
import struct
import time

from zeo_core.adapters.runtime_host.canonical import ProtocolError, canonical_bytes, digest, manifest_inventory
from zeo_core.contracts.runtime import RuntimeReply


class Refused(Exception):
    """The Runtime did not allow a request: the attempt ends in its state."""

    def __init__(self, reply):
        super().__init__(reply.state)
        self.reply = reply


class RuntimeChannel:
    def __init__(self, sock, raw_context, context):
        self.sock, self.raw, self.context = sock, raw_context, context
        self.binding = context.attempt.model_dump(mode="json")
        self.nonce = os.environ.get("ZEO_TESTHOST_NONCE") or secrets.token_hex(32)
        self.sequence = 0

    def call(self, method, payload):
        self.sequence += 1
        body = canonical_bytes({"binding": self.binding, "host_nonce": self.nonce, "method": method,
                                "payload": payload, "protocol_version": 1, "sequence": self.sequence})
        remaining = self.context.deadline_unix_ms / 1000 - time.time()
        if remaining <= 0:
            raise ProtocolError("the attempt's deadline passed")
        self.sock.settimeout(min(remaining, self.context.rpc_timeout_ms / 1000))
        self.sock.sendall(struct.pack(">I", len(body)) + body)
        n = struct.unpack(">I", self._read(4))[0]
        if n == 0 or n > self.context.max_message_bytes:
            raise ProtocolError("a reply of %d bytes" % n)
        reply = RuntimeReply.model_validate_json(self._read(n))
        if (reply.sequence != self.sequence or reply.host_nonce != self.nonce
                or reply.binding.model_dump(mode="json") != self.binding
                or reply.request_digest != "sha256:" + hashlib.sha256(body).hexdigest()):
            raise ProtocolError("the reply is bound to another request")
        if reply.state != "allowed":
            raise Refused(reply)
        return reply.data

    def bootstrap(self):
        hashed = dict(self.raw)
        hashed["provider"] = dict(self.raw["provider"])
        hashed["provider"]["manifests"] = manifest_inventory(self.raw["provider"]["manifests"])
        return self.call("bootstrap", {"bootstrap_id": self.context.bootstrap_id,
                                       "launch_digest": digest(hashed), "pid": os.getpid()})

    def _read(self, n):
        b = b""
        while len(b) < n:
            chunk = self.sock.recv(n - len(b))
            if not chunk:
                raise ProtocolError("the Runtime closed the socket")
            b += chunk
        return b

    def close(self):
        self.sock.close()
