"""A node's own settings (``proxmox_node``): one object per node and kind (its APT repositories, ...)."""
