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
behind the ``proxmox`` execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_pool"


def __virtual__():
    if "proxmox.pool_present" not in __salt__:
        return False, "proxmox_pool: the proxmox execution module is not available"
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


def present(name, comment=None, target=None, adopt=False, **kwargs):
    """
    Ensure pool ``name`` exists with ``comment``. Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.pool_present"](
        name,
        comment=comment,
        test=__opts__["test"],
        target=target,
        adopt=adopt,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )


def absent(name, target=None, removal="retain", **kwargs):
    """
    Stop managing pool ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion created it and it is unchanged.
    """
    return __salt__["proxmox.pool_absent"](
        name,
        test=__opts__["test"],
        target=target,
        removal=removal,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )
