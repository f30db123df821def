"""State module ``proxmox_storage``: Proxmox VE storage definitions (``storage.cfg``, cluster-wide).

.. code-block:: yaml

    backups:
      proxmox_storage.present:
        - type: nfs                    # identity: another type is another storage id
        - server: 192.0.2.20           # fixed after create, as export, path, vgname, pool, datastore, ...
        - export: /export/pve
        - content: backup,iso          # a set; a YAML list too
        - nodes: pve1,pve2
        - prune-backups: keep-last=3
        - secrets_pillar: proxmox:storage:backups  # the secrets, from pillar
        - secret_serial: 1             # the secrets are written again when it changes

    pbs-backups:
      proxmox_storage.present:
        - type: pbs
        - server: 192.0.2.30
        - datastore: store1             # a proxmox:pbs:datastores entry of this PBS target
        - pbs_target: backup1          # the product makes the PBS token, its ACL entries, and writes
        - pbs_user: pve-backup@pbs     #   username, fingerprint and password (the token's secret,
        - pbs_secret_path: secret/data/pve/pbs/backups  # kept in OpenBao here, KV version 2)
        - pbs_token_serial: 1          # raise it to make the token anew

    old:
      proxmox_storage.absent:
        - removal: retain              # default: forget it; destroy: delete the definition (never the data)

The logic lives in ``salt_proxmox.storage`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_storage"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, type=None, target=None, adopt=False, secrets_pillar=None, **kwargs):
    """Ensure storage ``name`` is defined as declared. Under ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, target=None, removal="retain", **kwargs):
    """Stop managing storage ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes the definition when this minion created it, it is unchanged and no guest has a volume on it.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
