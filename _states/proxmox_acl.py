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
``salt_proxmox.simple`` behind the ``proxmox`` execution module.

:depends: salt_proxmox
"""

__virtualname__ = "proxmox_acl"


def __virtual__():
    if "proxmox.acl_present" not in __salt__:
        return False, "proxmox_acl: the proxmox execution module is not available"
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


def present(
    name, path, role, user=None, group=None, token=None, propagate=True, target=None, adopt=False, **kwargs
):
    """
    Ensure ``role`` is granted on ``path`` to exactly one of ``user``, ``group`` or ``token``,
    with ``propagate``. Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.acl_present"](
        name,
        path,
        role,
        user=user,
        group=group,
        token=token,
        propagate=propagate,
        test=__opts__["test"],
        target=target,
        adopt=adopt,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )


def absent(name, path, role, user=None, group=None, token=None, target=None, removal="retain", **kwargs):
    """
    Stop managing one ACL entry: retain (default) forgets it; destroy removes the grant when this
    minion made it and it is unchanged.
    """
    return __salt__["proxmox.acl_absent"](
        name,
        path,
        role,
        user=user,
        group=group,
        token=token,
        test=__opts__["test"],
        target=target,
        removal=removal,
        state_id=_state_id(name),
        **_declared(kwargs),
        **_run(),
    )
