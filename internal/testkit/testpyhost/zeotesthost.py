"""The stand-in host (zeo_core.adapters.runtime_host) under a short
top-level name, for tests that run `python -m zeotesthost` and list their
own preload: it runs that package as `python -m` would. Its own top-level
import is runpy alone, so a zygote's discovery finds nothing to preload
here; tests of the default preload run zeo_core.adapters.runtime_host."""

import runpy

if __name__ == "__main__":
    runpy.run_module("zeo_core.adapters.runtime_host", run_name="__main__", alter_sys=True)
