"""The stand-in managed host, run as `python -m zeo_core.adapters.runtime_host
invoke --request - --context-fd 3 --runtime-fd 4`. Importing this package
does nothing; __main__ runs the host."""
