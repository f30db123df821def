"""A declared ``cipassword`` that is PVE's mask is refused at plan (issue 32 item 13).

qemu-server ``PVE/API2/Qemu.pm``: ``vm_config`` answers ``**********`` in a set ``cipassword``'s
place, and ``update_vm_api`` hashes whatever it is sent (``PVE::Tools::encrypt_pw``): a mask copied
from a read into pillar would become the guest's password.
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.qemu import schema
from salt_proxmox.qemu.props import parse_declaration


def _parse(**config: object):
    return parse_declaration("web", vmid=150, node="pve1", target="homelab", config=config)


def test_the_mask_is_refused_naming_the_key_and_why() -> None:
    with pytest.raises(DeclarationError) as raised:
        _parse(cipassword=schema.PASSWORD_MASK, ciuser="ops")
    message = str(raised.value)
    assert "cipassword: ********** is PVE's mask" in message
    assert "update_vm_api" in message


def test_a_password_that_only_contains_stars_is_a_password() -> None:
    declared = _parse(cipassword="*" * 12, ciuser="ops")
    assert declared.secrets == {"cipassword": "*" * 12}
    declared = _parse(cipassword="ab**********", ciuser="ops")
    assert "cipassword" in declared.secrets
