"""State module ``proxmox_ha_resource``: Proxmox VE HA resources, guests the HA manager keeps in a state.

.. code-block:: yaml

    ct:150:
      proxmox_ha_resource.present:
        - state: started               # started (default), stopped, disabled, ignored
        - max_restart: 2
        - max_relocate: 1
        - comment: web
        - target: homelab              # optional when one target is configured

    ct:160:
      proxmox_ha_resource.absent:
        - removal: retain              # default: forget it; destroy: take the guest out of HA

The logic lives in ``salt_proxmox.ha`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_ha_resource"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure HA resource ``name`` exists as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing HA resource ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
