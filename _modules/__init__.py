"""Salt execution modules of salt-proxmox (packaged as ``saltext_proxmox.modules``)."""
