"""State module ``proxmox_firewall_alias``: cluster firewall aliases (``/cluster/firewall/aliases``),
planned with ``test=True`` and applied without it, by the same decision.

.. code-block:: yaml

    web_hosts:
      proxmox_firewall_alias.present:
        - cidr: 10.0.0.0/24            # an address or network; /32 and /128 are PVE's bare address
        - comment: Web tier            # optional; trimmed as PVE trims it
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over an alias this minion did not create

    web_servers:
      proxmox_firewall_alias.present:
        - cidr: 10.0.0.0/24
        - rename_from: web_hosts       # creates web_servers, then deletes web_hosts

    old_alias:
      proxmox_firewall_alias.absent: []

Names compare case-insensitively (PVE keys aliases in lower case), so a case-only change writes
nothing. Rules and IP sets that name an alias are not rewritten by a rename or a delete: move
them in the same change. The logic lives in ``salt_proxmox.firewall`` behind the ``proxmox``
execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_firewall_alias"


def __virtual__():
    if "proxmox.firewall_alias_present" not in __salt__:
        return False, "proxmox_firewall_alias: the proxmox execution module is not available"
    return __virtualname__


def _run():
    """This state run as Salt injects it (``__low__``, ``__lowstate__``, ``__instance_id__``),
    passed through whole for the library's run-wide checks and reads."""
    return {key: globals().get(key) for key in ("__low__", "__lowstate__", "__instance_id__")}


def _state_id(name):
    return (globals().get("__low__") or {}).get("__id__", name)


def _declared(kwargs):
    """The keys the state was given beyond its own, for the library to refuse by name."""
    return {key: value for key, value in kwargs.items() if not key.startswith("__")}


def present(name, cidr, comment=None, target=None, adopt=False, rename_from=None, **kwargs):
    """
    Ensure alias ``name`` stands for ``cidr`` (with ``comment``): create it when PVE answers
    "no such alias", update it in place (with the digest it was judged against), or, with
    ``rename_from``, create it first and delete the old alias after. Under ``test=True`` nothing
    is written (not PVE, not grains).
    """
    return __salt__["proxmox.firewall_alias_present"](
        name,
        cidr,
        comment=comment,
        test=__opts__["test"],
        target=target,
        adopt=adopt,
        rename_from=rename_from,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )


def absent(name, target=None, **kwargs):
    """
    Ensure alias ``name`` is gone: delete it when this minion created it and it still holds what
    was last declared; an alias that is not ours is refused, one already gone is fine.
    """
    return __salt__["proxmox.firewall_alias_absent"](
        name, test=__opts__["test"], target=target, state_id=_state_id(name), **_declared(kwargs), **_run()
    )
