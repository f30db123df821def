"""Salt state modules of salt-proxmox (packaged as ``saltext_proxmox.states``)."""
