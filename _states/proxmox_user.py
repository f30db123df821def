"""State module ``proxmox_user``: Proxmox VE users, their fields and group memberships.

.. code-block:: yaml

    ci@pve:
      proxmox_user.present:
        - groups: [automation]           # a set; membership lives on the user
        - email: ci@example.org
        - secrets_pillar: proxmox:users:ci@pve  # its password (pve realm), from pillar; sent at create only
        - password_serial: 1

``root@pam`` is never declared. The logic lives in ``salt_proxmox.access.user`` behind the ``proxmox``
execution module."""

__virtualname__ = "proxmox_user"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure user ``name`` is as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing user ``name``: retain (default) forgets it; destroy deletes it (with its tokens,
    memberships and ACL entries) when this minion created it and it is unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
