"""Process-wide machinery of the stand-in zeo_core."""
