"""State module ``proxmox_lxc``: Proxmox VE containers, planned with ``test=True`` and applied
without it, by the same judge.

.. code-block:: yaml

    web:
      proxmox_lxc.present:
        - vmid: 150
        - node: pve1
        - target: homelab            # optional when one target is configured
        - ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
        - unprivileged: true
        - hostname: web
        - memory: 1024               # MiB
        - cores: 2
        - rootfs: local-zfs:8        # storage:GiB for a new volume
        - net0: name=eth0,bridge=vmbr0,ip=dhcp
        - features: nesting=1
        - tags: web;prod
        - adopt: false               # true takes over a live guest this minion did not create
        - migrate: false             # true: declared on another node, it is migrated there
        - reboot_for_pending: false  # true reboots it when changes it wrote wait for a restart
        - status: running            # or stopped (a clean shutdown); left out: power left alone
        - shutdown_timeout: 60       # seconds a shutdown waits (status: stopped only)
        - force_stop: false          # true lets PVE stop it hard after that timeout
        - removal: retain            # or destroy (used by absent)
        - backup: required           # refused at plan while no enabled backup job covers it
        - secrets_pillar: secrets:web  # reads password from pillar secrets:web (never an argument)

``password`` is a secret and never a state argument (Salt keeps a state's arguments in
``highstate.cache.p`` in its cachedir): ``secrets_pillar`` names the pillar mapping holding it (a
colon-delimited path or a list of keys) and the state reads it from there; ``password:`` itself is
refused, naming ``secrets_pillar``. The proxmox formula passes each entry's own pillar path.

Config keys are spelled as PVE spells them (``pct set`` / the API). The logic lives in the
``salt_proxmox`` library behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_lxc"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, vmid, node, **kwargs):
    """Ensure container ``vmid`` on ``node`` is as declared: create it when the cluster proves the
    vmid free, update drifted keys in place, refuse what only root@pam or a new guest could do.
    Under ``test=True`` nothing is written (not PVE, not OpenBao, not grains).

    A running container takes some keys at once and keeps the others pending until it restarts
    (``memory``, ``cores``, ``netN`` at once; ``rootfs``, ``nameserver``, ``features``, ... at the
    next start): the comment says which. ``reboot_for_pending: true`` lets the apply reboot the
    container so the changes it wrote take effect; without it nothing is ever rebooted.

    ``status: running|stopped`` declares its power state: planned (``would start``, ``would shut
    down``) and applied after the config through ``POST …/status/start|shutdown`` tasks. A shutdown
    waits ``shutdown_timeout`` seconds (default 60) and is never forced unless ``force_stop: true``.

    Its other arguments are those the module's example shows (``target``, ``adopt``, ``removal``,
    ``reboot_for_pending``, ``secrets_pillar``) and PVE's config keys, passed on whole.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, vmid, node, target=None, removal="retain"):
    """Stop managing container ``vmid``. ``removal: retain`` (default) forgets ownership and
    touches nothing; ``removal: destroy`` deletes it only if it still matches its last
    declaration, without force or purge.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
