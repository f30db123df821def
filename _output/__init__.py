"""Salt outputters of salt-proxmox (packaged as ``saltext_proxmox.output``)."""
