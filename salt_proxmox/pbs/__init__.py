"""Proxmox Backup Server targets (``proxmox:pbs_targets``) and the datastores declared on them."""
