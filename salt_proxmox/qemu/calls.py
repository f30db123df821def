"""The ad-hoc calls of the qemu family (``proxmox.qemu_config``, ``_create``, ``_update``, ``_resize``),
described for the execution module that generates them from the registry (``registry.Family.adhoc``,
``salt_proxmox.run.calls``): ``{verb: (arguments, docstring)}``, an argument ending in ``?`` optional
(default None). Their logic is the guest lifecycle's (``guest.adhoc``, ``guest.live``).
"""

from __future__ import annotations

CALLS: dict[str, tuple[tuple[str, ...], str]] = {
    "config": (
        ("vmid", "node?"),
        """\
The config of one VM with its pending changes merged in (what it runs with after its next start,
as ``qm config`` shows it): ``sshkeys`` decoded, ``cipassword`` only as ``set``, no digest. ``node``
defaults to the one the cluster's guest index lists. Fails with a sentence when no VM holds
``vmid``, and on any other error.

CLI Example:

.. code-block:: bash

    salt-call proxmox.qemu_config vmid=150
""",
    ),
    "create": (
        ("node", "vmid"),
        """\
Create a VM (``POST /nodes/{node}/qemu``, or by ``clone=<template vmid>`` its ``…/clone``) after
proving the vmid free, wait for the task with the credential that started it, read it back and
record it as ours. The same rules as the ``proxmox_qemu.present`` state apply; returns its state
return dict. Disks as new ``storage:GiB`` volumes only; ``name`` is the VM's PVE name (none when
not given). Raises CommandExecutionError with the state's comment when it is refused or fails
(nothing half-recorded).

CLI Example:

.. code-block:: bash

    salt-call proxmox.qemu_create node=pve1 vmid=160 name=app memory=2048 \\
        scsi0=local-lvm:32 net0=virtio,bridge=vmbr0
    salt-call proxmox.qemu_create node=pve1 vmid=161 clone=9000 full=True cores=2
""",
    ),
    "update": (
        ("node", "vmid"),
        """\
Write config keys to a VM this minion owns: one digest-guarded ``POST …/config`` task, then a
resize task per grown disk, then a read-back. The keys merge over its recorded declaration, so
a key not given keeps its declared value. A VM this minion did not create (no ``owned`` row),
or one at a recycled vmid (not carrying the row's fingerprint), is refused. Raises
CommandExecutionError with the state's comment when it is refused or fails.

CLI Example:

.. code-block:: bash

    salt-call proxmox.qemu_update node=pve1 vmid=150 memory=4096 cores=4
""",
    ),
    "resize": (
        ("node", "vmid", "disk", "size"),
        """\
Grow one disk (``PUT /nodes/{node}/qemu/{vmid}/resize``) of a VM this minion owns and wait for
the task. ``size`` as PVE takes it (qemu-server ``PVE/API2/Qemu.pm`` ``resize_vm``: a number
with an optional binary unit K, M, G or T, a bare number bytes): ``+2G`` to grow by, or an
absolute ``40G``. Returns ``{upid, disk, size}``. A VM this minion did not create, or one that
does not carry its row's fingerprint, is refused, as ``proxmox.qemu_update`` refuses it: raises
CommandExecutionError with the reason.

CLI Example:

.. code-block:: bash

    salt-call proxmox.qemu_resize node=pve1 vmid=150 disk=scsi0 size=+8G
""",
    ),
}
