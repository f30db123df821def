"""State module ``proxmox_group``: Proxmox VE groups and their comment.

.. code-block:: yaml

    automation:
      proxmox_group.present:
        - comment: CI systems

Members are never compared here: a user's ``groups`` owns its membership (PVE stores it on the user).
The logic lives in ``salt_proxmox.access.group`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_group"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, comment=None, target=None, adopt=False, **kwargs):
    """Ensure group ``name`` exists with ``comment``. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing group ``name``: retain (default) forgets it; destroy deletes it when this minion
    created it and it is unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
