"""The managed host's wire models (pydantic, strict), built at import as
upstream's zeo_core.contracts.runtime builds its own: the import the
host pays for before its first frame."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from zeo_core.contracts.capabilities import CapabilityManifest

Identifier = Annotated[str, Field(min_length=1, max_length=256)]
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
State = Literal["succeeded", "invalid_request", "failed", "refused", "unavailable", "cancelled", "timed_out",
                "queued", "running", "waiting_approval", "needs_reconciliation", "protocol_error"]


class WireModel(BaseModel):
    """Strict wire input: unknown fields and coercions are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("protocol_version", mode="before", check_fields=False)
    @classmethod
    def version_one(cls, v):
        if type(v) is not int or v != 1:
            raise ValueError("protocol_version is the integer 1")
        return v


class ProviderBinding(WireModel):
    protocol_version: Literal[1]
    distribution: Identifier
    version: Identifier
    python_version: Identifier
    environment_digest: Digest
    factory: Annotated[str, Field(pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")]
    manifests: tuple[CapabilityManifest, ...]
    manifest_digest: Digest
    generation: Annotated[int, Field(ge=1)]


class AttemptBinding(WireModel):
    organization_id: Identifier
    project_id: Identifier
    seat_id: Identifier
    runtime_binding_id: Identifier
    packet_id: Identifier
    operation_id: Identifier
    attempt_id: Identifier
    fencing_generation: Annotated[int, Field(ge=1)]
    capability_id: Identifier
    request_digest: Digest
    manifest_digest: Digest


class LaunchContext(WireModel):
    protocol_version: Literal[1]
    provider: ProviderBinding
    attempt: AttemptBinding
    bootstrap_id: Identifier
    admitted_capabilities: tuple[Identifier, ...]
    deadline_unix_ms: Annotated[int, Field(gt=0)]
    services: tuple[Identifier, ...] = ()
    credentials: tuple[Identifier, ...] = ()
    binaries: tuple[Identifier, ...] = ()
    network_hosts: tuple[Identifier, ...] = ()
    network_allowed: bool = False
    filesystem_read: bool = False
    filesystem_write: bool = False
    workspace: Identifier
    max_message_bytes: Annotated[int, Field(ge=1024, le=1 << 20)] = 1 << 20
    rpc_timeout_ms: Annotated[int, Field(ge=1, le=30000)] = 5000
    total_dispatch_budget: Annotated[int, Field(ge=0)] = 0


class InvocationRequest(WireModel):
    protocol_version: Literal[1]
    capability_id: Identifier
    arguments: dict[str, Any]


class EffectRequest(WireModel):
    logical_effect_id: Identifier
    connection_ref: Identifier
    connector_revision: Digest
    operation: Identifier
    arguments: dict[str, Any]


class HostResult(WireModel):
    protocol_version: Literal[1]
    binding: AttemptBinding | None
    state: State
    effect_disposition: Literal["none", "confirmed", "unknown"]
    data: Any = None
    error_code: str | None = None
    artifact_refs: tuple[Identifier, ...] = ()

    @model_validator(mode="after")
    def coherent(self):
        if self.state == "succeeded" and (self.error_code or self.effect_disposition == "unknown"):
            raise ValueError("a success holds no error and no unknown effect")
        if self.effect_disposition == "unknown" and self.state not in ("needs_reconciliation", "protocol_error"):
            raise ValueError("an unknown effect needs reconciliation")
        return self


class RuntimeReply(WireModel):
    protocol_version: Literal[1]
    sequence: Annotated[int, Field(ge=1)]
    host_nonce: Identifier
    binding: AttemptBinding
    request_digest: Digest
    state: Literal["allowed", "refused", "cancelled", "waiting_approval", "needs_reconciliation"]
    data: dict[str, Any] = Field(default_factory=dict)


EXIT_CODES = {"succeeded": 0, "invalid_request": 2, "refused": 3, "unavailable": 4, "failed": 5,
              "cancelled": 6, "timed_out": 7, "protocol_error": 8, "queued": 10, "running": 10,
              "waiting_approval": 10, "needs_reconciliation": 10}
