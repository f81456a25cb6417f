"""Your side of the track: fill in each ``exNN_*.py`` in order (see exercises/README.md)."""
