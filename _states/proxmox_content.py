"""State module ``proxmox_content``: ISO images, container templates and import images PVE downloads
from a URL into a storage (``POST /nodes/{node}/storage/{storage}/download-url``).

.. code-block:: yaml

    debian-iso:
      proxmox_content.present:
        - storage: local                 # a file storage whose content includes iso
        - content: iso                   # iso, vztmpl or import
        - filename: debian-13.iso        # the volid is local:iso/debian-13.iso
        - url: https://cdimage.debian.org/.../debian-13.0.0-amd64-netinst.iso
        - checksum: 3b0a...              # required unless verify: false
        - checksum-algorithm: sha256     # md5, sha1, sha224, sha256, sha384, sha512
        - nodes: all                     # or [pve1, pve2]: where a storage that is not shared needs it
        - replace: false                 # true deletes a changed file and downloads it again
        - adopt: false                   # true takes over a file this minion did not download
        - target: homelab                # optional when one target is configured

A file is compared by volid and size on each node; PVE shows no checksum, so the ownership row keeps
the declared source and a changed one is a re-download (refused unless ``replace: true``, never while
a VM's drive names it). The logic lives in ``salt_proxmox.content`` behind the ``proxmox`` execution
module."""

__virtualname__ = "proxmox_content"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(name, storage=None, content=None, filename=None, url=None, target=None, adopt=False, **kwargs):
    """Ensure file ``filename`` of ``content`` (iso, vztmpl, import) is on ``storage``, downloaded from
    ``url`` and verified by ``checksum`` (``checksum-algorithm``), on each node of ``nodes`` a storage that
    is not shared needs it on. Under ``test=True`` nothing is written.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, storage=None, content=None, filename=None, target=None, removal="retain", **kwargs):
    """Stop managing the file: retain (default) forgets it; destroy deletes it on each node this minion
    downloaded it to, when no VM's drive names it.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
