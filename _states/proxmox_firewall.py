"""State module ``proxmox_firewall``: the firewall of the cluster, its nodes, guests and security groups,
planned with ``test=True`` and applied without it, by the same decision.

.. code-block:: yaml

    vm/510:
      proxmox_firewall.rules:
        - rules:                            # the whole ordered list, first rule first
          - {type: in, action: ACCEPT, macro: SSH, source: +admins, enable: 1, comment: ssh}
          - {type: group, action: webgrp, enable: 1}
        - adopt: false                      # true: own a list this minion did not write, whole
        - allow_lockout: false              # true: allow a change the model says drops this minion
        - target: homelab                   # optional when one target is configured

    node/pve2:
      proxmox_firewall.rules_absent:
        - removal: destroy                  # retain (default) forgets the list, destroy deletes its rules

The name is the scope: ``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>`` or ``group/<name>``.
A rule without ``enable`` is stored disabled, as PVE stores it. The logic lives in
``salt_proxmox.firewall`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_firewall"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def rules(name, rules=None, target=None, adopt=False, allow_lockout=False, **kwargs):
    """Ensure the rule list of scope ``name`` is ``rules``, in order: the fewest inserts, moves, updates
    and deletes, each sent after a read that shows the list as planned (a PUT or DELETE with its
    digest). Rules this minion did not write are refused unless ``adopt: true``; a change that would
    drop this minion's API or SSH traffic unless ``allow_lockout: true``.
    """
    return __salt__["proxmox.run_state"](globals(), "rules", locals())


def rules_absent(name, target=None, removal="retain", **kwargs):
    """Stop managing the rule list of scope ``name``: ``removal: retain`` forgets it, ``removal:
    destroy`` deletes its rules when they are still exactly the last declaration.
    """
    return __salt__["proxmox.run_state"](globals(), "rules_absent", locals())
