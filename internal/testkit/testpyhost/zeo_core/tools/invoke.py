"""Calling one capability of a generation."""

from zeo_core.contracts import CapabilityOutcome, CapabilityResult


class BoundCapability:
    """A capability of an activated generation: its admitted definition,
    the provider's function and, when the provider declares one, its
    request model."""

    def __init__(self, *, definition, fn, request_model=None):
        self.definition = definition
        self._fn = fn
        self.request_model = request_model


def invoke(capability, arguments, ctx):
    """Runs capability; an exception is a failure whose message is its text."""
    try:
        return CapabilityResult.ok(capability._fn(arguments, ctx))
    except Exception as e:  # noqa: BLE001 -- the provider's failure, as a result
        return CapabilityResult(outcome=CapabilityOutcome.failure, machine_message=str(e))
