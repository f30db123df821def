"""A live cluster read back as the pillar the formula reads (``proxmox.export``)."""
