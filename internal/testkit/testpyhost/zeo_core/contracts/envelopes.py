"""The result envelope a capability returns."""

import enum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class CapabilityOutcome(str, enum.Enum):
    success = "success"
    failure = "failure"
    unavailable = "unavailable"
    cancelled = "cancelled"


class CapabilityResult(BaseModel, Generic[T]):
    model_config = ConfigDict(extra="forbid")

    outcome: CapabilityOutcome
    data: T | None = None
    machine_message: str | None = None
    metadata: dict[str, Any] = {}

    @classmethod
    def ok(cls, data):
        return cls(outcome=CapabilityOutcome.success, data=data)

    @classmethod
    def fail(cls, message):
        return cls(outcome=CapabilityOutcome.failure, machine_message=message)
