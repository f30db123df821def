"""Containers (``proxmox_lxc``): declaration model, pure judge, and the calls behind plan/apply."""
