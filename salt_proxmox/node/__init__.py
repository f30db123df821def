"""A node's own configuration (``proxmox_node``): its resolvers (``dns``), ``/etc/hosts`` (``hosts``) and
time zone (``time``), one object each per node (docs/design.md §7n)."""
