"""A CD-ROM's ISO is checked at plan (salt_proxmox.pve.facts.volume_presence, qemu.family.iso_checks).

qemu-server refuses a create or config write naming an ISO that is not there (``PVE/API2/Qemu.pm``
``create_disks``: ``PVE::Storage::path``/``volume_size_info``, "volume '…' does not exist"), so the
plan reads ``GET /nodes/{node}/storage/{storage}/content/{volume}`` (pve-storage
``src/PVE/API2/Storage/Content.pm`` ``info``) once per volume and run. PVE's answers for a volume
that is not there are pinned here as PVE words them: a file storage's ``volume_size_info`` dies
"volume_size_info on '<volid>' failed - no format" (what fakepve answers too); a block storage's
``parse_volname``/``path`` "volume '<volid>' does not exist"; an unknown storage ``storage_config``'s
"storage '<id>' does not exist". ``check_volume_access`` answers 403 without Datastore.Audit or
Datastore.AllocateSpace on ``/storage/{storage}``."""

from __future__ import annotations

import pytest

from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.facts import volume_presence
from salt_proxmox.qemu.drives import iso_volumes
from salt_proxmox.qemu.family import iso_checks
from salt_proxmox.qemu.props import parse_declaration
from tests.support.stubs import pve_context

ISO = "local:iso/missing.iso"
PATH = "nodes/pve1/storage/local/content/local%3Aiso%2Fmissing.iso"


def decl(**config: object):
    return parse_declaration("web", vmid=150, node="pve1", target="homelab", config=config)


def answering(error: PveError | None):
    def handler(method, path, params, form):
        if error is not None:
            raise error
        return {"path": "/var/lib/vz/template/iso/missing.iso", "size": 1, "used": 1, "format": "iso"}

    return handler


def test_only_iso_volumes_of_cdroms_are_named() -> None:
    values = {
        "ide2": f"{ISO},media=cdrom",
        "ide3": "none,media=cdrom",
        "sata0": "cdrom,media=cdrom",
        "ide0": "local-lvm:cloudinit",
        "scsi0": "local-lvm:8",
        "name": "web",
        "sata1": "",
    }
    assert iso_volumes(values) == {"ide2": ISO}


@pytest.mark.parametrize(
    "said",
    [
        f"volume_size_info on '{ISO}' failed - no format",  # dir/nfs/cifs: file_size_info cannot stat
        f"volume '{ISO}' does not exist",  # parse_volname/path of a block storage
        "storage 'local' does not exist",  # storage_config
    ],
)
def test_pves_answers_for_a_missing_iso_refuse_the_plan_naming_key_volume_and_remedy(said: str) -> None:
    ctx = pve_context(answering(PveError("GET", PATH, 500, said)))
    refusals, notes = iso_checks(ctx, decl(ide2=f"{ISO},media=cdrom"), {"ide2": f"{ISO},media=cdrom"})
    (refusal,) = refusals
    assert refusal.startswith(f"ide2: {ISO} is not on storage local") and said in refusal
    assert "Upload the ISO to local, or correct the volume id" in refusal
    assert notes == []
    assert [(m, p) for m, p, *_ in ctx.client.sent] == [("GET", PATH)]


def test_a_403_says_the_check_could_not_be_made_and_refuses_nothing() -> None:
    denied = PveError(
        "GET", PATH, 403, "Permission check failed (/storage/local, Datastore.AllocateSpace|Datastore.Audit)"
    )
    ctx = pve_context(answering(denied))
    refusals, notes = iso_checks(ctx, decl(ide2=f"{ISO},media=cdrom"), {"ide2": f"{ISO},media=cdrom"})
    assert refusals == []
    (note,) = notes
    assert "could not check that local:iso/missing.iso exists" in note
    assert "Datastore.Audit (or Datastore.AllocateSpace) on /storage/local" in note


def test_another_error_is_the_states_error_and_is_not_kept() -> None:
    failing = PveError("GET", PATH, 500, "got timeout")
    ctx = pve_context(answering(failing))
    for _ in range(2):
        with pytest.raises(PveError, match="got timeout"):
            volume_presence(ctx, "pve1", ISO)
    assert len(ctx.client.sent) == 2


def test_a_present_iso_is_read_once_per_run_and_passes() -> None:
    ctx = pve_context(answering(None))
    ctx.begin("run-1")
    value = {"ide2": f"{ISO},media=cdrom", "ide3": f"{ISO},media=cdrom"}
    for _ in range(3):
        assert iso_checks(ctx, decl(**value), value) == ([], [])
    assert len(ctx.client.sent) == 1
    ctx.begin("run-2")
    assert volume_presence(ctx, "pve1", ISO).state == "present"
    assert len(ctx.client.sent) == 2


def test_nothing_is_read_when_no_iso_is_written() -> None:
    ctx = pve_context(answering(None))
    assert iso_checks(ctx, decl(), {"ide2": "none,media=cdrom", "scsi0": "local-lvm:8"}) == ([], [])
    assert ctx.client.sent == []
