"""How values are spelled on the PVE wire, and when two spellings are one value (pure)."""
