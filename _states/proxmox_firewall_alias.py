"""State module ``proxmox_firewall_alias``: firewall aliases of the cluster (``/cluster/firewall/aliases``)
or of a guest (``scope: vm/<vmid>``),
planned with ``test=True`` and applied without it, by the same decision.

.. code-block:: yaml

    web_hosts:
      proxmox_firewall_alias.present:
        - cidr: 10.0.0.0/24            # an address or network; /32 and /128 are PVE's bare address
        - comment: Web tier            # optional; trimmed as PVE trims it
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over an alias this minion did not create
        - scope: vm/510                # optional: a guest's own alias (vm/<vmid>, ct/<vmid>); default cluster

    web_servers:
      proxmox_firewall_alias.present:
        - cidr: 10.0.0.0/24
        - rename_from: web_hosts       # creates web_servers, then deletes web_hosts

    old_alias:
      proxmox_firewall_alias.absent:
        - removal: destroy             # default retain: forget it, leave it in PVE

Names compare case-insensitively (PVE keys aliases in lower case), so a case-only change writes
nothing. Rules and IP sets that name an alias are not rewritten by a rename or a delete: move
them in the same change. The logic lives in ``salt_proxmox.firewall`` behind the ``proxmox``
execution module."""

__virtualname__ = "proxmox_firewall_alias"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, cidr, comment=None, target=None, adopt=False, rename_from=None, scope=None, **kwargs):
    """Ensure alias ``name`` stands for ``cidr`` (with ``comment``): create it when PVE answers
    "no such alias", update it in place (with the digest it was judged against), or, with
    ``rename_from``, create it first and delete the old alias after. Under ``test=True`` nothing
    is written (not PVE, not grains).
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, scope=None, **kwargs):
    """Stop managing alias ``name`` (at ``scope``: cluster, ``vm/<vmid>``, ``ct/<vmid>``):
    ``removal: retain`` (default) forgets it and leaves it in PVE; ``removal: destroy`` deletes it when
    this minion created it and it still holds what was last declared (an alias that is not ours is
    refused, one already gone is fine).
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
