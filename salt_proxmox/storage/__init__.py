"""PVE storage definitions (``proxmox_storage``): the cluster-wide ``storage.cfg``."""
