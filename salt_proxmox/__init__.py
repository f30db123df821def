"""salt-proxmox: the rules and clients behind the Salt states that manage Proxmox VE and OpenBao.

Nothing in this package imports Salt. Pure rules live in ``wire`` and each family's ``judge``;
HTTP lives in ``pve`` and ``openbao``; ownership is stored through an injected store.
"""

__version__ = "0.1.0"
