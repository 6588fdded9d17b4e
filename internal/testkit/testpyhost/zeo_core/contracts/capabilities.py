"""The capability manifest as pydantic models."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Name = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")]


class ContractModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CapabilityID(ContractModel):
    namespace: Name
    name: Name
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")]

    def canonical(self):
        return "%s.%s@%s" % (self.namespace, self.name, self.version)


class CapabilityExample(ContractModel):
    name: str | None = None
    request: dict[str, Any]
    response: Any = None
    description: str | None = None


class CapabilityEffects(ContractModel):
    kinds: tuple[Literal["none", "read", "write", "external", "destructive", "network", "filesystem",
                         "credential", "payment", "message"] | str, ...] = ()
    concurrency: str = "parallel"
    resource_key_fields: tuple[str, ...] = ()


class NetworkRequirement(ContractModel):
    required: bool = False
    hosts: tuple[str, ...] = ()


class FilesystemRequirement(ContractModel):
    read: bool = False
    write: bool = False
    roles: tuple[str, ...] = ()


class CapabilityRequirements(ContractModel):
    services: tuple[str, ...] = ()
    credentials: tuple[str, ...] = ()
    binaries: tuple[str, ...] = ()
    network: NetworkRequirement = NetworkRequirement()
    filesystem: FilesystemRequirement = FilesystemRequirement()


class CapabilityDeprecation(ContractModel):
    deprecated: bool = False
    successor: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def successor_only_when_deprecated(self):
        if self.successor and not self.deprecated:
            raise ValueError("a successor needs deprecated")
        return self


class CapabilityManifest(ContractModel):
    schema_version: str
    id: CapabilityID
    description: str = ""
    request_schema: dict[str, Any]
    response_schema: dict[str, Any]
    examples: tuple[CapabilityExample, ...] = ()
    error_codes: tuple[str, ...] = ()
    effects: CapabilityEffects = CapabilityEffects()
    requirements: CapabilityRequirements = CapabilityRequirements()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = {}
    deprecation: CapabilityDeprecation = CapabilityDeprecation()
    projection_name: str | None = None

    @field_validator("request_schema", "response_schema")
    @classmethod
    def object_schema(cls, v):
        if v.get("type", "object") != "object":
            raise ValueError("a capability schema describes an object")
        return v
