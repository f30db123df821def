"""State module ``proxmox_firewall``: the PVE firewall of the cluster, its nodes, guests and security
groups — options, ordered rule lists, IP sets and security groups — planned with ``test=True`` and
applied without it, by the same decision.

.. code-block:: yaml

    cluster:
      proxmox_firewall.options:        # name: cluster, node/<node>, vm/<vmid> or ct/<vmid>
        - ebtables: 0                  # the scope's options as PVE spells them; PVE's defaults are no drift
        - policy_in: DROP
        - allow_lockout: false         # true lets a change through that would cut this minion off

    vm/510:
      proxmox_firewall.rules:
        - rules:                            # the whole ordered list, first rule first
          - {type: in, action: ACCEPT, macro: SSH, source: +admins, enable: 1, comment: ssh}
          - {type: group, action: webgrp, enable: 1}
        - adopt: false                      # true: own a list this minion did not write, whole
        - allow_lockout: false              # true: allow a change the model says drops this minion

    admins:
      proxmox_firewall.ipset:
        - scope: cluster               # or vm/<vmid>, ct/<vmid> (the guest must exist)
        - comment: admin hosts
        - allow_lockout: false         # true: allow a management/blacklist change that drops this minion
        - cidrs:
          - {cidr: 192.0.2.0/24, comment: admin lan}
          - {cidr: 192.0.2.128/25, nomatch: true}

    webgrp:
      proxmox_firewall.group:
        - comment: web tier            # its rules: proxmox_firewall.rules at group/webgrp

    oldset:
      proxmox_firewall.ipset_absent:
        - removal: destroy             # refused while rules still name it

A rule list's name is its scope: ``cluster``, ``node/<node>``, ``vm/<vmid>``, ``ct/<vmid>`` or
``group/<name>``; a rule without ``enable`` is stored disabled, as PVE stores it. IP set and group names
are lower case (PVE reads them back so). The logic lives in
``salt_proxmox.firewall`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_firewall"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def options(name, target=None, adopt=False, **kwargs):
    """Ensure the firewall options of scope ``name`` are as declared (one digest-guarded PUT)."""
    return __salt__["proxmox.run_state"](globals(), "options", locals())


def ipset(
    name, scope="cluster", comment=None, cidrs=None, target=None, adopt=False, allow_lockout=False, **kwargs
):
    """Ensure IP set ``name`` at ``scope`` holds exactly ``cidrs`` (entries written one by one). A change
    to the cluster's ``management`` or ``blacklist`` set that would drop this minion's API or SSH traffic
    is refused unless ``allow_lockout: true``."""
    return __salt__["proxmox.run_state"](globals(), "ipset", locals())


def group(name, comment=None, target=None, adopt=False, **kwargs):
    """Ensure security group ``name`` exists with ``comment``."""
    return __salt__["proxmox.run_state"](globals(), "group", locals())


def options_absent(name, target=None, removal="retain"):
    """Stop managing the options of scope ``name``: retain (default) or put the declared ones back to
    PVE's defaults."""
    return __salt__["proxmox.run_state"](globals(), "options_absent", locals())


def ipset_absent(name, scope="cluster", target=None, removal="retain"):
    """Stop managing IP set ``name`` at ``scope``: retain (default) or destroy an owned, unchanged one."""
    return __salt__["proxmox.run_state"](globals(), "ipset_absent", locals())


def group_absent(name, target=None, removal="retain"):
    """Stop managing security group ``name``: retain (default) or destroy an owned, unchanged, empty,
    unused one."""
    return __salt__["proxmox.run_state"](globals(), "group_absent", locals())


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
