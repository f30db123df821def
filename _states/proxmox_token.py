"""State module ``proxmox_token``: Proxmox VE API tokens, their secret kept in OpenBao.

.. code-block:: yaml

    ci@pve!deploy:
      proxmox_token.present:
        - privsep: 1
        - expire: 0
        - store: secret/data/pve-tokens/ci-deploy  # the OpenBao KV path; the secret goes there only
        - secret_serial: 1                          # a change draws a new secret

The logic lives in ``salt_proxmox.access.token`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_token"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, store=None, target=None, adopt=False, **kwargs):
    """Ensure API token ``name`` (``user@realm!tokenid``) exists as declared, its secret at ``store``.
    Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing token ``name``: retain (default) forgets it; destroy deletes it when this minion
    created it and it is unchanged."""
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
