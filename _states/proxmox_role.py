"""State module ``proxmox_role``: custom Proxmox VE roles, their privileges compared as a set.

.. code-block:: yaml

    SaltProxmoxRead:
      proxmox_role.present:
        - privs: [VM.Audit, Datastore.Audit, Sys.Audit, Pool.Audit]
        - target: homelab              # optional when one target is configured
        - adopt: false                 # true takes over a role this minion did not create

Built-in roles (Administrator, NoAccess, PVE*) cannot be declared: PVE does not let anyone change
them. The logic lives in ``salt_proxmox.simple`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_role"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, privs=None, target=None, adopt=False, **kwargs):
    """Ensure role ``name`` holds exactly ``privs`` (a list, or one comma-separated string).
    Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing role ``name``: retain (default) forgets it; destroy deletes it when this minion
    created it and it is unchanged (PVE leaves ACL entries naming it in place).
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
