"""One supervised attempt: bootstrap, the provider's generation,
admission, the call, its governed effects and publication. The steps
before the call run in upstream's order: the managed-execution latch, the
scope and deadline checks, bootstrap, then the generation
(installed_factory, then CandidateCatalogue().activate, which validates
the inventory, builds the registry and compares it)."""

import logging
import threading
import time

from zeo_core.adapters.runtime_host.canonical import InvalidRequestError, ProtocolError, digest
from zeo_core.adapters.runtime_host.catalogue import CandidateCatalogue, installed_factory, validate_schema
from zeo_core.adapters.runtime_host.channel import Refused, RuntimeChannel
from zeo_core.contracts import CapabilityOutcome
from zeo_core.contracts.runtime import EffectRequest, HostResult, InvocationRequest, LaunchContext
from zeo_core.core.managed_execution import enter_managed_execution
from zeo_core.tools import ToolContext
from zeo_core.tools.invoke import invoke


class End(Exception):
    def __init__(self, state, code=None):
        super().__init__(state)
        self.state, self.code = state, code


class EffectPort:
    """The runtime.effects service: each request goes to the Runtime,
    which owns dispatch; a request handed over whose reply is lost or
    not allowed leaves the outcome uncertain."""

    def __init__(self, channel, budget):
        self._channel, self._budget = channel, budget
        self._lock = threading.Lock()
        self._requests = {}
        self.unknown = False
        self.confirmed = False
        self.pending = None

    def request(self, request):
        with self._lock:
            if self.pending is not None or self.unknown:
                raise ProtocolError("an earlier effect needs the Runtime's recovery")
            body = request.model_dump(mode="json")
            fingerprint = digest(body)
            prior = self._requests.get(request.logical_effect_id)
            if prior is not None and prior != fingerprint:
                raise ProtocolError("a logical effect id reused with other input")
            if prior is None and len(self._requests) >= self._budget:
                raise ProtocolError("the effect budget is spent")
            self._requests[request.logical_effect_id] = fingerprint
            self.unknown = True  # handed over: a lost reply is ambiguous
            try:
                data = self._channel.call("effect.request", body)
            except Refused as e:
                self.pending = e.reply
                self.unknown = e.reply.state == "needs_reconciliation"
                raise ProtocolError("the effect did not complete")
            if (data.get("logical_effect_id") != request.logical_effect_id
                    or data.get("effect_request_digest") != fingerprint
                    or not data.get("receipt_id") or not data.get("authorization_id")
                    or data.get("effect_disposition") != "confirmed"):
                raise ProtocolError("the effect's receipt is not bound to the request")
            self.unknown, self.confirmed = False, True
            return data

    def disposition(self):
        return "unknown" if self.unknown else ("confirmed" if self.confirmed else "none")


def _arguments(manifest, arguments):
    """The arguments validated, with the top-level defaults."""
    try:
        validate_schema(manifest.request_schema).validate(arguments)
    except Exception:  # noqa: BLE001
        raise InvalidRequestError("the request failed validation")
    out = dict(arguments)
    for k, p in manifest.request_schema.get("properties", {}).items():
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

    def invoke(self, raw_request, *, factory=None):
        """The attempt's HostResult, as a dict. An injected factory stands
        for an already allowlisted in-process provider."""
        refs, result = [], End("succeeded")
        effects = EffectPort(self.channel, self.context.total_dispatch_budget)
        try:
            enter_managed_execution()
            ctx = self.context
            req = InvocationRequest.model_validate_json(raw_request)
            if req.capability_id != self.binding["capability_id"] or req.capability_id not in ctx.admitted_capabilities:
                raise End("refused", "ZEO_HOST_SCOPE")
            if time.time() * 1000 >= ctx.deadline_unix_ms:
                raise End("timed_out", "ZEO_HOST_DEADLINE")
            self.channel.bootstrap()
            catalogue = CandidateCatalogue()
            generation = catalogue.activate(ctx.provider, factory or installed_factory(ctx.provider))
            try:
                refs = self._execute(generation, req, effects)
            finally:
                catalogue.dispose(generation)
        except End as e:
            result = e
        except InvalidRequestError:
            result = End("invalid_request", "ZEO_HOST_INVALID_REQUEST")
        except Refused as e:
            if e.reply.state == "needs_reconciliation":
                effects.unknown = True
            result = End(e.reply.state, "ZEO_HOST_REFUSED" if e.reply.state == "refused" else None)
        except Exception:  # noqa: BLE001 -- never the provider's text
            if effects.pending is not None and not effects.unknown:
                st = effects.pending.state
                result = End(st, "ZEO_HOST_REFUSED" if st == "refused" else None)
            elif effects.unknown:
                result = End("needs_reconciliation", "ZEO_HOST_PROTOCOL")
            else:
                result = End("protocol_error", "ZEO_HOST_PROTOCOL")
        finally:
            self.channel.close()
        return HostResult(protocol_version=1, binding=self.context.attempt, state=result.state,
                          effect_disposition=effects.disposition(), error_code=result.code,
                          artifact_refs=tuple(refs)).model_dump(mode="json")

    def _execute(self, generation, req, effects):
        ctx = self.context
        capability = generation.capabilities.get(req.capability_id)
        if capability is None:
            raise ProtocolError("the provider lacks the capability")
        manifest = capability.definition
        args = _arguments(manifest, req.arguments)
        if digest({"capability_id": req.capability_id, "arguments": args}) != self.binding["request_digest"]:
            raise End("refused", "ZEO_HOST_REQUEST_BINDING")
        services = {"runtime.effects": effects}
        needed = set(manifest.requirements.services)
        if needed - set(ctx.services) or needed - services.keys():
            raise End("unavailable", "ZEO_HOST_REQUIREMENTS")
        self.channel.call("invoke.admit", {"arguments": args})
        tctx = ToolContext(run_id=self.binding["operation_id"], tool_name=manifest.id.name,
                           tool_version=manifest.id.version, logger=logging.getLogger("zeo.host"),
                           work_dir=ctx.workspace, services=services)
        result = invoke(capability, args, tctx)
        if effects.pending is not None:
            raise Refused(effects.pending)
        if effects.unknown:
            raise End("needs_reconciliation")
        if result.outcome != CapabilityOutcome.success:
            raise End("failed", result.machine_message)
        data = result.data
        reply = self.channel.call("result.publish", {"data": data, "data_digest": digest(data)})
        if reply.get("data_digest") != digest(data) or not reply.get("artifact_refs"):
            raise ProtocolError("the Runtime did not accept the artifact")
        return reply["artifact_refs"]


__all__ = ["EffectPort", "EffectRequest", "InvalidRequestError", "ManagedHost"]
