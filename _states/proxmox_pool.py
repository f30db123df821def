"""State module ``proxmox_pool``: Proxmox VE resource pools and their comment.

.. code-block:: yaml

    prod:
      proxmox_pool.present:
        - comment: Production guests   # optional; '' or none for no comment
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over a pool this minion did not create

    old-pool:
      proxmox_pool.absent:
        - removal: retain              # default: forget it; destroy: delete it (PVE refuses a non-empty pool)

Members (guests, storages) are not managed here. The logic lives in ``salt_proxmox.simple``
behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_pool"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, comment=None, target=None, adopt=False, **kwargs):
    """Ensure pool ``name`` exists with ``comment``. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing pool ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
