"""A provider's capabilities by name: what its factory returns."""


class CapabilityRegistry:
    """tools maps names to functions; a provider that declares its
    manifests (dicts or CapabilityManifest models) and request models
    (pydantic models by name) gets them compared with the admitted
    inventory at activation."""

    def __init__(self, tools, manifests=None, request_models=None):
        self._tools = dict(tools)
        self._manifests = None if manifests is None else list(manifests)
        self._models = dict(request_models or {})

    def get(self, name):
        return self._tools.get(name)

    def names(self):
        return sorted(self._tools)

    def manifests(self):
        """The declared manifests, None when the provider declares none."""
        return self._manifests

    def request_model(self, name):
        return self._models.get(name)
