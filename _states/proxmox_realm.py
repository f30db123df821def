"""State module ``proxmox_realm``: Proxmox VE authentication realms (``ldap``, ``ad``, ``openid``).

.. code-block:: yaml

    corp:
      proxmox_realm.present:
        - type: ldap                     # identity: another type is another realm
        - server1: ldap.example.org
        - base_dn: dc=example,dc=org
        - user_attr: uid
        - bind_dn: cn=pve,dc=example,dc=org
        - sync-defaults-options: scope=users,enable-new=1
        - secrets_pillar: proxmox:realms:corp  # bind_password (ldap/ad) or client-key (openid), from pillar
        - bind_password_serial: 1        # the bind password is written again when it changes

``pam`` and ``pve`` are never declared, deleted or re-created. A sync is ``proxmox.realm_sync``. The logic
lives in ``salt_proxmox.access.realm`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_realm"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, type=None, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure realm ``name`` is defined as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing realm ``name``: retain (default) forgets it; destroy deletes it when this minion
    created it and it is unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
