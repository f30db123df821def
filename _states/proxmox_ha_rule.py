"""State module ``proxmox_ha_rule``: Proxmox VE HA rules (PVE 9): node-affinity and resource-affinity rules.

.. code-block:: yaml

    web-on-pve1:
      proxmox_ha_rule.present:
        - type: node-affinity          # or resource-affinity (with affinity: positive|negative)
        - resources: [ct:150]
        - nodes: [pve1:2, pve2:1]
        - strict: 0

    old-rule:
      proxmox_ha_rule.absent:
        - removal: retain              # default: forget it; destroy: delete it

The logic lives in ``salt_proxmox.ha`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_ha_rule"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, **kwargs):
    """Ensure HA rule ``name`` exists as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing HA rule ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
