"""A provider's capabilities by name: what its factory returns."""


class CapabilityRegistry:
    def __init__(self, tools):
        self._tools = dict(tools)

    def get(self, name):
        return self._tools.get(name)

    def names(self):
        return sorted(self._tools)
