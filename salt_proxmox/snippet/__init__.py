"""Snippets (``proxmox_snippet``): files in a storage's ``snippets`` directory, which a VM's
``cicustom`` (``user=``, ``network=``, ``meta=``, ``vendor=``) and a guest's ``hookscript`` name by
volid (``<storage>:snippets/<file>``).

PVE has no API call that writes one (pve-storage ``src/PVE/API2/Storage/Status.pm`` ``upload`` takes
``content`` ``iso``, ``vztmpl`` and ``import`` only), so a snippet is written through the target's root
lane: the states run as root on a node of the cluster, and the file is written there, atomically
(``salt_proxmox.snippet.disk``). The declaration is ``salt_proxmox.snippet.declare``, the storage's
checks ``salt_proxmox.snippet.place``, plan and apply ``salt_proxmox.snippet.lifecycle``, and the check
of a guest's ``cicustom``/``hookscript`` naming a snippet ``salt_proxmox.snippet.guard``.
"""
