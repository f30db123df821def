"""Ceph pools of a PVE-managed Ceph cluster (``proxmox_ceph_pool``): ``pool.py`` is the family's
``ObjectSpec``, run by the simple lifecycle (``salt_proxmox.simple.lifecycle``)."""
