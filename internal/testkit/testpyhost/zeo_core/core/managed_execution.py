"""The managed-execution latch: a process-wide switch the host sets once
it runs a supervised attempt (a zygote's default Switches module)."""

_MANAGED = False


def enter_managed_execution():
    global _MANAGED
    _MANAGED = True


def in_managed_execution():
    return _MANAGED
