"""State module ``proxmox_mapping``: Proxmox VE resource mappings (Datacenter → Resource Mappings): PCI and
USB devices and directories, each named cluster-wide with an entry per node.

.. code-block:: yaml

    gpu:
      proxmox_mapping.pci:
        - description: The lab's GPUs
        - mdev: false
        - map:                         # a set: one entry per device per node
          - node=pve1,path=0000:01:00.0,id=10de:1eb8,iommugroup=14,subsystem-id=10de:12a2
          - {node: pve2, path: "0000:02:00.0", id: "10de:1eb8", iommugroup: 20}

    token-key:
      proxmox_mapping.usb:
        - map: [node=pve1,id=1050:0407]  # one entry per node

    shared:
      proxmox_mapping.dir:             # PVE 8.4 or later
        - map: [node=pve1,path=/srv/shared, node=pve2,path=/srv/shared]

    old-gpu:
      proxmox_mapping.pci_absent:
        - removal: destroy             # refused while a VM names it

A VM names one as ``hostpci0: mapping=gpu``, ``usb0: mapping=token-key`` or ``virtiofs0: shared``; its
state is refused at plan when the mapping has no entry for its node. The logic lives in
``salt_proxmox.datacenter.mappings`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_mapping"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def pci(name, map=None, target=None, adopt=False, **kwargs):
    """Ensure PCI mapping ``name`` holds exactly the ``map`` entries and the declared options."""
    return __salt__["proxmox.run_state"](globals(), "pci", locals())


def usb(name, map=None, target=None, adopt=False, **kwargs):
    """Ensure USB mapping ``name`` holds exactly the ``map`` entries and the declared options."""
    return __salt__["proxmox.run_state"](globals(), "usb", locals())


def dir(name, map=None, target=None, adopt=False, **kwargs):
    """Ensure directory mapping ``name`` holds exactly the ``map`` entries and the declared options."""
    return __salt__["proxmox.run_state"](globals(), "dir", locals())


def pci_absent(name, target=None, removal="retain"):
    """Stop managing PCI mapping ``name``: retain (default) or destroy an owned, unchanged one no VM names."""
    return __salt__["proxmox.run_state"](globals(), "pci_absent", locals())


def usb_absent(name, target=None, removal="retain"):
    """Stop managing USB mapping ``name``: retain (default) or destroy an owned, unchanged one no VM names."""
    return __salt__["proxmox.run_state"](globals(), "usb_absent", locals())


def dir_absent(name, target=None, removal="retain"):
    """Stop managing directory mapping ``name``: retain (default) or destroy an owned, unchanged one no VM
    names."""
    return __salt__["proxmox.run_state"](globals(), "dir_absent", locals())
