"""A node's own configuration (``proxmox_node``): its resolvers (``dns``), ``/etc/hosts`` (``hosts``),
time zone (``time``) and APT repositories (``apt_repository``), one object each per node and kind
(docs/design.md §7n, §7o)."""
