"""The ad-hoc calls of the lxc family (``proxmox.lxc_config``, ``_create``, ``_update``, ``_resize``),
described for the execution module that generates them from the registry (``registry.Family.adhoc``,
``salt_proxmox.run.calls``): ``{verb: (arguments, docstring)}``, an argument ending in ``?`` optional
(default None). Their logic is the guest lifecycle's (``guest.adhoc``, ``guest.live``).
"""

from __future__ import annotations

CALLS: dict[str, tuple[tuple[str, ...], str]] = {
    "config": (
        ("vmid", "node?"),
        """\
The config of one container with its pending changes merged in (what it runs with after its
next start, as ``pct config`` shows it), description included; without digest, lock, env or raw
``lxc`` values. ``node`` defaults to the one the cluster's guest index lists. Fails with a
sentence when no container holds ``vmid``, and on any other error.

CLI Example:

.. code-block:: bash

    salt-call proxmox.lxc_config vmid=150
    salt-call proxmox.lxc_config vmid=150 node=pve1 target=homelab
""",
    ),
    "create": (
        ("node", "vmid", "ostemplate"),
        """\
Create a container (``POST /nodes/{node}/lxc``) after proving the vmid free, wait for the
task with the credential that started it, read it back and record it as ours. The same rules
as the ``proxmox_lxc.present`` state apply; returns its state return dict. ``rootfs``/``mpN``
as new ``storage:GiB`` volumes only. Raises CommandExecutionError with the state's comment when
it is refused or fails (nothing half-recorded).

CLI Example:

.. code-block:: bash

    salt-call proxmox.lxc_create node=pve1 vmid=151 \\
        ostemplate=local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst \\
        rootfs=local-zfs:8 unprivileged=1 hostname=ct151
""",
    ),
    "update": (
        ("node", "vmid"),
        """\
Write config keys to a container this minion owns: one digest-guarded PUT, then a resize
task per grown disk, then a read-back. The keys merge over its recorded declaration. Raises
CommandExecutionError with the state's comment when it is refused or fails.

CLI Example:

.. code-block:: bash

    salt-call proxmox.lxc_update node=pve1 vmid=150 memory=2048
""",
    ),
    "resize": (
        ("node", "vmid", "disk", "size"),
        """\
Grow one mount point (``PUT /nodes/{node}/lxc/{vmid}/resize``) of a container this minion
owns and wait for the task. ``size`` as PVE takes it (pve-container ``src/PVE/API2/LXC.pm``
``resize_vm``: a number with an optional binary unit K, M, G or T, a bare number bytes):
``+2G`` to grow by, or an absolute ``12G``. Returns ``{upid, disk, size}``. A guest this
minion did not create is refused, as ``proxmox.lxc_update`` refuses it: raises
CommandExecutionError with the reason.

CLI Example:

.. code-block:: bash

    salt-call proxmox.lxc_resize node=pve1 vmid=150 disk=rootfs size=+2G
""",
    ),
}
