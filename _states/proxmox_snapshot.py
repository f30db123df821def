"""State module ``proxmox_snapshot``: a named snapshot of a container or VM exists. A state never rolls a
guest back to a snapshot (``proxmox.snapshot_rollback`` does, ad hoc, showing first what it discards).

.. code-block:: yaml

    before-upgrade:                    # the snapname
      proxmox_snapshot.present:
        - vmid: 150
        - node: pve1
        - type: lxc                    # optional: lxc or qemu, read from the guest index when left out
        - description: pre 13.2        # may change later (PUT …/snapshot/{snapname}/config)
        - vmstate: false               # VMs only: save the RAM too (the VM must be running)
        - adopt: false                 # true takes over a snapshot this minion did not take

    old-snapshot:
      proxmox_snapshot.absent:
        - vmid: 150
        - node: pve1
        - removal: retain              # default: forget it; destroy: delete the snapshot

A vmid is one guest in the cluster, so ``type`` left out is the guest index row's (or, for a guest
this run creates, its declaring state's); given, it must agree. The formula renders one per entry of
a guest's ``snapshots:`` list, requiring the guest, with the type of the list's guest. The logic
lives in ``salt_proxmox.backup`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_snapshot"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, vmid=None, node=None, type=None, target=None, adopt=False, **kwargs):
    """Ensure snapshot ``name`` of guest ``vmid`` exists as declared. Under ``test=True`` nothing is
    written."""
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, vmid=None, node=None, type=None, target=None, removal="retain", **kwargs):
    """Stop managing snapshot ``name``: ``removal: retain`` (default) forgets it; ``removal: destroy``
    deletes it when this minion took it and it is unchanged.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
