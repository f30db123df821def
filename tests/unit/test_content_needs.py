"""What a declared download needs of the provision credential in the estate's privileges report
(``proxmox.privileges_needed``, ``access.estate.chunk_needs`` through the registry's ``Kind.needs``)."""

from __future__ import annotations

from salt_proxmox.access.estate import chunk_needs
from salt_proxmox.run.lowstate import Chunk

ISO = {"storage": "local", "content": "iso", "filename": "debian-13.iso",
       "url": "https://cdimage.example.org/debian-13.iso", "checksum": "ab" * 32,
       "checksum-algorithm": "sha256"}  # fmt: skip


def test_a_download_needs_allocate_template_on_its_storage_and_sys_modify() -> None:
    # pve-storage API2/Storage/Status.pm download_url: Datastore.AllocateTemplate on /storage/{storage},
    # Sys.Audit and Sys.Modify on / (or Sys.AccessNetwork on the node, which the check does not weigh).
    found = chunk_needs(Chunk("iso", "iso", "proxmox_content", "present", ISO), "lab")
    wanted = {(n.credential, n.path, n.privileges) for n in found}
    assert ("provision", "/storage/local", ("Datastore.AllocateTemplate",)) in wanted, found
    assert ("provision", "/", ("Sys.Audit", "Sys.Modify")) in wanted, found


def test_a_download_the_declaration_refuses_needs_nothing_its_state_says_why() -> None:
    bad = {**ISO, "filename": "debian 13.iso"}
    assert chunk_needs(Chunk("iso", "iso", "proxmox_content", "present", bad), "lab") == []
    gone = {"storage": "local", "content": "iso", "filename": "debian-13.iso", "removal": "retain"}
    assert chunk_needs(Chunk("iso", "iso", "proxmox_content", "absent", gone), "lab") == []
