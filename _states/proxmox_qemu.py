"""State module ``proxmox_qemu``: Proxmox VE virtual machines, planned with ``test=True`` and applied
without it, by the same judge.

.. code-block:: yaml

    web:                             # the state's name is the VM's name (PVE's ``name``)
      proxmox_qemu.present:
        - name_from_id: false        # true: ``web`` is only the state id; a live VM keeps its name
        - vmid: 150
        - node: pve1
        - target: homelab            # optional when one target is configured
        - memory: 2048               # MiB
        - cores: 2
        - cpu: host
        - ostype: l26
        - scsihw: virtio-scsi-single
        - scsi0: local-lvm:32,discard=on,iothread=1   # storage:GiB for a new disk; a larger N grows it
        - ide2: local:iso/debian-13.0.0-amd64-netinst.iso,media=cdrom
        - ide0: local-lvm:cloudinit
        - net0: virtio,bridge=vmbr0,tag=20             # PVE draws the MAC; it is kept
        - ciuser: ops
        - secrets_pillar: secrets:web  # reads cipassword from pillar secrets:web (never an argument)
        - cipassword_serial: 1       # bump it to write the declared password again
        - sshkeys: |
            ssh-ed25519 AAAA... ops@example
        - ipconfig0: ip=dhcp
        - pool: web
        - adopt: false               # true takes over a live VM this minion did not create
        - migrate: false             # true: declared on another node, it is migrated there
        - reboot_for_pending: false  # true reboots it when changes it wrote wait for a restart
        - removal: retain            # or destroy (used by absent)
        - backup: required           # refused at plan while no enabled backup job covers it

    app:
      proxmox_qemu.present:
        - vmid: 151
        - node: pve1
        - clone: 9000                # a template's vmid: created as its clone, then configured
        - full: true                 # a full clone (a template gives a linked clone by default)
        - storage: local-lvm         # the full clone's target storage
        - cores: 4

``cipassword`` is a secret and never a state argument (Salt keeps a state's arguments in
``highstate.cache.p`` in its cachedir): ``secrets_pillar`` names the pillar mapping holding it (a
colon-delimited path or a list of keys) and the state reads it from there; ``cipassword:`` itself is
refused, naming ``secrets_pillar``. The proxmox formula passes each entry's own pillar path.

Config keys are spelled as ``qm set`` and the API spell them. The logic lives in the
``salt_proxmox`` library behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_qemu"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, vmid, node, **kwargs):
    """Ensure VM ``vmid`` on ``node``, named ``name``, is as declared: create it (from scratch, or by
    cloning the template ``clone`` names) when the cluster proves the vmid free, update drifted keys in place,
    grow disks, refuse what only root@pam or a new VM could do. Under ``test=True`` nothing is
    written (not PVE, not OpenBao, not grains).

    A running VM takes some keys at once and keeps the others pending until it restarts (its
    ``hotplug`` option decides: by default NICs and new SCSI/VirtIO disks at once, ``cores`` and
    ``memory`` at the next start): the comment says which. ``reboot_for_pending: true`` lets the
    apply reboot the VM so the changes it wrote take effect; without it nothing is ever rebooted.

    ``target``, ``adopt``, ``removal``, ``reboot_for_pending``, ``secrets_pillar`` and ``qm``'s config
    keys (the module's example) are passed on whole, for the library to check each by name.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, vmid, node, target=None, removal="retain"):
    """Stop managing VM ``vmid``. ``removal: retain`` (default) forgets ownership and touches nothing;
    ``removal: destroy`` deletes it only if it still matches its last declaration, without force or
    purge.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
