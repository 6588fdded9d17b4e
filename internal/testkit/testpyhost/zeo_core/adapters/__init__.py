"""Adapters of the stand-in zeo_core."""
