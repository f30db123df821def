"""State module ``proxmox_role``: custom Proxmox VE roles, their privileges compared as a set.

.. code-block:: yaml

    SaltProxmoxRead:
      proxmox_role.present:
        - privs: [VM.Audit, Datastore.Audit, Sys.Audit, Pool.Audit]
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over a role this minion did not create

Built-in roles (Administrator, NoAccess, PVE*) cannot be declared: PVE does not let anyone change
them. The logic lives in ``salt_proxmox.simple`` behind the ``proxmox`` execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_role"


def __virtual__():
    if "proxmox.role_present" not in __salt__:
        return False, "proxmox_role: the proxmox execution module is not available"
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


def present(name, privs=None, target=None, adopt=False, **kwargs):
    """
    Ensure role ``name`` holds exactly ``privs`` (a list, or one comma-separated string).
    Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.role_present"](
        name,
        privs=privs,
        test=__opts__["test"],
        target=target,
        adopt=adopt,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )


def absent(name, target=None, removal="retain", **kwargs):
    """
    Stop managing role ``name``: retain (default) forgets it; destroy deletes it when this minion
    created it and it is unchanged (PVE leaves ACL entries naming it in place).
    """
    return __salt__["proxmox.role_absent"](
        name,
        test=__opts__["test"],
        target=target,
        removal=removal,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )
