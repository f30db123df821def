"""Simple PVE objects (docs/design.md §7): one description per family, one lifecycle for all of them.

A family (pools, roles, ACL entries, firewall aliases, ...) is an ``ObjectSpec`` in ``spec``;
``lifecycle`` plans and applies any of them the same way.
"""
