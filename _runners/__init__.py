"""Salt runners of salt-proxmox (packaged as ``saltext_proxmox.runners``)."""
