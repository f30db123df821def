"""Downloaded files (``proxmox_content``): ISO images, container templates and import images that PVE
fetches from a URL into a storage (pve-storage ``src/PVE/API2/Storage/Status.pm`` ``download_url``), by
volid (``<storage>:<content>/<filename>``), on every node a storage that is not shared needs them.

The declaration is ``salt_proxmox.content.declare``, the reads ``salt_proxmox.content.live``, plan and
apply ``salt_proxmox.content.lifecycle``.
"""
