"""State module ``proxmox_acl``: one Proxmox VE ACL entry — a role for a user, group or API token
on a path.

.. code-block:: yaml

    salt-read-on-root:
      proxmox_acl.present:
        - path: /
        - role: SaltProxmoxRead
        - token: salt-read@pve!plan    # or user: alice@pve, or group: admins
        - propagate: true              # default
        - require:
          - proxmox_role: SaltProxmoxRead

An entry is absent when ``GET /access/acl`` does not list it and the read token holds Sys.Audit
on /access (else the list is filtered and proves nothing). The logic lives in
``salt_proxmox.simple`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_acl"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(
    name, path, role, user=None, group=None, token=None, propagate=True, target=None, adopt=False, **kwargs
):
    """Ensure ``role`` is granted on ``path`` to exactly one of ``user``, ``group`` or ``token``,
    with ``propagate``. Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, path, role, user=None, group=None, token=None, target=None, removal="retain", **kwargs):
    """Stop managing one ACL entry: retain (default) forgets it; destroy removes the grant when this
    minion made it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
