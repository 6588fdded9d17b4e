"""One supervised attempt: bootstrap, the provider, admission, the call
and publication."""

import logging
import time

from zeo_core.adapters.runtime_host.canonical import InvalidRequestError, ProtocolError, capability_id, digest
from zeo_core.adapters.runtime_host.catalogue import installed_factory, validate_schema
from zeo_core.adapters.runtime_host.channel import Refused, RuntimeChannel
from zeo_core.contracts import CapabilityOutcome
from zeo_core.contracts.runtime import HostResult, InvocationRequest, LaunchContext
from zeo_core.core.managed_execution import enter_managed_execution
from zeo_core.tools import ToolContext
from zeo_core.tools.invoke import invoke


class End(Exception):
    def __init__(self, state, code=None):
        super().__init__(state)
        self.state, self.code = state, code


def _arguments(manifest, arguments):
    """The arguments validated, with the top-level defaults."""
    try:
        validate_schema(manifest["request_schema"]).validate(arguments)
    except Exception:  # noqa: BLE001
        raise End("invalid_request", "ZEO_HOST_INVALID_REQUEST")
    out = dict(arguments)
    for k, p in manifest["request_schema"].get("properties", {}).items():
        if k not in out and "default" in p:
            out[k] = p["default"]
    return out


class ManagedHost:
    """One attempt: raw is the launch context as received, context the
    same parsed."""

    def __init__(self, raw, context, sock):
        self.context = LaunchContext.model_validate_json(raw)
        self.binding = self.context.attempt.model_dump(mode="json")
        self.channel = RuntimeChannel(sock, context, self.context)

    def invoke(self, raw_request):
        """The attempt's HostResult, as a dict."""
        refs, result = [], End("succeeded")
        try:
            enter_managed_execution()
            refs = self._invoke(InvocationRequest.model_validate_json(raw_request))
        except End as e:
            result = e
        except Refused as e:
            result = End(e.reply.state, "ZEO_HOST_REFUSED" if e.reply.state == "refused" else None)
        except Exception:  # noqa: BLE001 -- never the provider's text
            result = End("protocol_error", "ZEO_HOST_PROTOCOL")
        finally:
            self.channel.close()
        return HostResult(protocol_version=1, binding=self.context.attempt, state=result.state,
                          effect_disposition="none", error_code=result.code,
                          artifact_refs=tuple(refs)).model_dump(mode="json")

    def _invoke(self, req):
        ctx = self.context
        if req.capability_id != self.binding["capability_id"] or req.capability_id not in ctx.admitted_capabilities:
            raise End("refused", "ZEO_HOST_SCOPE")
        if time.time() * 1000 >= ctx.deadline_unix_ms:
            raise End("timed_out", "ZEO_HOST_DEADLINE")
        self.channel.bootstrap()
        registry = installed_factory(ctx.provider)
        manifest = next((m for m in self.channel.raw["provider"]["manifests"] if capability_id(m) == req.capability_id), None)
        if manifest is None or registry.get(manifest["id"]["name"]) is None:
            raise ProtocolError("the provider lacks the capability")
        args = _arguments(manifest, req.arguments)
        if digest({"capability_id": req.capability_id, "arguments": args}) != self.binding["request_digest"]:
            raise End("refused", "ZEO_HOST_REQUEST_BINDING")
        self.channel.call("invoke.admit", {"arguments": args})
        tctx = ToolContext(run_id=self.binding["operation_id"], tool_name=manifest["id"]["name"],
                           tool_version=manifest["id"]["version"], logger=logging.getLogger("zeo.host"),
                           work_dir=ctx.workspace)
        result = invoke(registry.get(manifest["id"]["name"]), args, tctx)
        if result.outcome != CapabilityOutcome.success:
            raise End("failed", result.machine_message)
        data = result.data
        reply = self.channel.call("result.publish", {"data": data, "data_digest": digest(data)})
        if reply.get("data_digest") != digest(data) or not reply.get("artifact_refs"):
            raise ProtocolError("the Runtime did not accept the artifact")
        return reply["artifact_refs"]


__all__ = ["InvalidRequestError", "ManagedHost"]
