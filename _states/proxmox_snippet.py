"""State module ``proxmox_snippet``: files in a storage's ``snippets`` directory (cloud-init user data
a VM's ``cicustom`` names, a guest's hookscript), written through the target's root lane.

.. code-block:: yaml

    web-user-data:
      proxmox_snippet.present:
        - name: web-user.yaml            # the file: local:snippets/web-user.yaml
        - storage: local                 # a dir/nfs/cifs/cephfs/btrfs storage with content snippets
        - source: salt://proxmox/files/web-user.yaml   # or secrets_pillar, below
        - template: jinja                # optional: rendered by Salt, then compared
        - context: {hostname: web}
        - executable: false              # true (mode 0755) for a hookscript
        - target: homelab                # optional when one target is configured
        - adopt: false                   # true takes over a file this minion did not write

    db-user-data:
      proxmox_snippet.present:
        - name: db-user.yaml
        - storage: local
        - secrets_pillar: proxmox:snippets:local:db-user.yaml   # reads content from there

PVE has no API call that writes a snippet, so the target needs ``root_lane: pvesh`` and the states run
on a node of its cluster (the ticket lane, which only calls the API, is refused). A snippet is compared
by the sha256 of its bytes; its content is never shown. A ``source`` is read (and rendered) by the
``proxmox`` execution module with Salt's own file machinery (``cp.get_file_str``,
``file.apply_template_on_contents``), and inline text (``content``, which may hold secrets: cloud-init
user data) from the pillar mapping ``secrets_pillar`` names, as the proxmox formula passes each entry's
own path: Salt keeps a state's arguments in ``highstate.cache.p`` in its cachedir, so a ``content``
argument is refused, naming ``secrets_pillar``. The text never is a state argument. The logic lives in
``salt_proxmox.snippet`` behind the ``proxmox`` execution module."""

__virtualname__ = "proxmox_snippet"


def __virtual__():
    return __virtualname__ if "proxmox.run_state" in __salt__ else (False, "no proxmox execution module")


def present(
    name,
    storage=None,
    source=None,
    template=None,
    context=None,
    executable=False,
    target=None,
    adopt=False,
    secrets_pillar=None,
    **kwargs,
):
    """Ensure snippet ``name`` on ``storage`` holds exactly the ``content`` of the pillar mapping
    ``secrets_pillar`` names — or the file ``source`` (``salt://...``) names, rendered with ``template``
    (``jinja``) and ``context`` by Salt — mode 0644 (0755 with ``executable: true``). Under
    ``test=True`` nothing is written.
    """
    return __salt__["proxmox.run_state"](globals(), "present", locals())


def absent(name, storage=None, target=None, removal="retain", **kwargs):
    """Stop managing snippet ``name`` on ``storage``: retain (default) forgets it; destroy deletes the
    file when this minion wrote it, it is unchanged and no guest's cicustom or hookscript names it.
    """
    return __salt__["proxmox.run_state"](globals(), "absent", locals())
