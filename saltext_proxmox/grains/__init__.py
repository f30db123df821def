"""Grains modules of this distribution (Salt's loader reads this directory: ``loader_dirs``)."""
