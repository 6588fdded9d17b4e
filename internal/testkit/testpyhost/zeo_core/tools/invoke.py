"""Calling one capability of a registry."""

from zeo_core.contracts import CapabilityOutcome, CapabilityResult


def invoke(tool, arguments, ctx):
    """Runs tool; an exception is a failure whose message is its text."""
    try:
        return CapabilityResult.ok(tool(arguments))
    except Exception as e:  # noqa: BLE001 -- the provider's failure, as a result
        return CapabilityResult(outcome=CapabilityOutcome.failure, machine_message=str(e))
