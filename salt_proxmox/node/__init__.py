"""A node's own configuration (``proxmox_node``): its resolvers (``dns``), ``/etc/hosts`` (``hosts``),
time zone (``time``) and APT repositories (``apt_repository``), one object each per node and kind
(docs/design.md §7n, §7o)."""

#: Each node kind (registry ``Kind.name``) by its key under ``proxmox:nodes:<node>``: the export places
#: an entry there, and the formula's ``NODE_KINDS`` (which cannot import the library) is pinned to it by
#: ``tests/unit/test_formula_nodes.py``.
PILLAR_KEYS = {"node_dns": "dns", "node_hosts": "hosts", "node_time": "time", "apt_repository": "apt"}
