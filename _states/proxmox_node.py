"""State module ``proxmox_node``: a node's own settings: its DNS resolvers, ``/etc/hosts``, time zone
and APT repositories, one object per node and kind.

.. code-block:: yaml

    pve1-dns:
      proxmox_node.dns:
        - name: pve1                   # the node; refused when the cluster has no such node
        - search: example.org          # PVE's PUT requires it: the node's own is kept when left out
        - dns1: 192.0.2.53
        - dns2: 192.0.2.54
        - dns3: null                   # cleared (a gap is refused: servers read back in file order)
        - adopt: true                  # a node always has them: the first write takes them over

    pve1-hosts:
      proxmox_node.hosts:
        - name: pve1
        - entries:                     # or data: the whole file
            192.0.2.21: [pve1.example.org, pve1]
            192.0.2.99: null           # no line for this address
        - adopt: true

    pve1-time:
      proxmox_node.time:
        - name: pve1
        - timezone: Europe/Vienna
        - adopt: true

    pve2-time:
      proxmox_node.time_absent:
        - name: pve2                   # forget it; PVE cannot delete a node's settings

    pve1-apt:
      proxmox_node.apt_repository:
        - name: pve1                   # the node
        - adopt: true                  # the node's repositories are live: take them over
        - repositories:
          - handle: no-subscription    # a standard repository (PVE 8 and 9 differ: proxmox-apt)
          - path: /etc/apt/sources.list.d/pve-enterprise.sources
            index: 0                   # the entry's place in its file, from 0
            enabled: false

    pve2-apt:
      proxmox_node.apt_repository_absent:
        - name: pve2
        - removal: retain              # default: forget it; destroy: disable the entries it enabled

Only the declared keys and entries are compared; every line of ``/etc/hosts`` outside the managed entries
is kept byte for byte, and each write carries PVE's digest. For ``dns``, ``hosts`` and ``time``
``removal: destroy`` is refused; for ``apt_repository`` it disables the entries the last declaration
enabled. No upgrade and no ``apt update`` is ever run. The logic lives in ``salt_proxmox.node`` behind
the ``proxmox`` execution module."""

__virtualname__ = "proxmox_node"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def dns(name, target=None, adopt=False, **kwargs):
    """Ensure node ``name``'s DNS settings hold the declared ``search`` and ``dns1``..``dns3``."""
    return __salt__["proxmox.run_state"](globals(), "dns", locals())


def hosts(name, target=None, adopt=False, **kwargs):
    """Ensure node ``name``'s ``/etc/hosts`` is ``data``, or holds the declared ``entries``."""
    return __salt__["proxmox.run_state"](globals(), "hosts", locals())


def time(name, target=None, adopt=False, **kwargs):
    """Ensure node ``name``'s time zone is ``timezone``."""
    return __salt__["proxmox.run_state"](globals(), "time", locals())


def dns_absent(name, target=None, removal="retain"):
    """Stop managing node ``name``'s DNS settings: forget them (``removal: destroy`` is refused)."""
    return __salt__["proxmox.run_state"](globals(), "dns_absent", locals())


def hosts_absent(name, target=None, removal="retain"):
    """Stop managing node ``name``'s ``/etc/hosts``: forget it (``removal: destroy`` is refused)."""
    return __salt__["proxmox.run_state"](globals(), "hosts_absent", locals())


def time_absent(name, target=None, removal="retain"):
    """Stop managing node ``name``'s time zone: forget it (``removal: destroy`` is refused)."""
    return __salt__["proxmox.run_state"](globals(), "time_absent", locals())


def apt_repository(name, repositories=None, target=None, adopt=False, **kwargs):
    """Ensure node ``name``'s declared APT repository entries are enabled or disabled as declared. Under
    ``test=True`` nothing is written."""
    return __salt__["proxmox.run_state"](globals(), "apt_repository", locals())


def apt_repository_absent(name, target=None, removal="retain", **kwargs):
    """Stop managing node ``name``'s APT repositories: ``removal: retain`` (default) forgets them;
    ``removal: destroy`` disables
    the entries this minion's last declaration enabled, when it still matches."""
    return __salt__["proxmox.run_state"](globals(), "apt_repository_absent", locals())
