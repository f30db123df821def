"""A node's API/GUI certificate (``proxmox_certificate``): ``spec`` (the family), ``pem`` (what a
certificate says, and whether this minion would trust it)."""
