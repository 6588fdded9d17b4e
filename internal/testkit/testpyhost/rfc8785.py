"""A stand-in for the rfc8785 distribution (RFC 8785 canonical JSON), a
third-party module the test host imports at its top level as the
upstream host imports the real one. It canonicalizes what the tests send:
objects, arrays, strings, booleans, null and integers within ±(2^53−1);
floats are refused."""

import json

_SAFE = (1 << 53) - 1


class CanonicalizationError(ValueError):
    """The value is outside what this stand-in canonicalizes."""


def _check(v, depth=0):
    if depth > 512:
        raise CanonicalizationError("nested too deeply")
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return
    if isinstance(v, int):
        if abs(v) > _SAFE:
            raise CanonicalizationError("integer outside the safe range")
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise CanonicalizationError("object key is not a string")
            _check(x, depth + 1)
        return
    if isinstance(v, (list, tuple)):
        for x in v:
            _check(x, depth + 1)
        return
    raise CanonicalizationError("unsupported type %s" % type(v).__name__)


def dumps(v):
    """The canonical UTF-8 bytes of v."""
    _check(v)
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
