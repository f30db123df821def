"""QEMU virtual machines: the family's schema, property strings and judge (pure)."""
