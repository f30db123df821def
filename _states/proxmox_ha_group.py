"""State module ``proxmox_ha_group``: Proxmox VE HA groups (PVE 8): the nodes an HA resource may run on.

.. code-block:: yaml

    prefer-pve1:
      proxmox_ha_group.present:
        - nodes: [pve1:2, pve2:1]
        - restricted: 0
        - nofailback: 0

    old-group:
      proxmox_ha_group.absent:
        - removal: retain              # default: forget it; destroy: delete it

The logic lives in ``salt_proxmox.ha`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_ha_group"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure HA group ``name`` exists as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing HA group ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
