"""Secrets a guest declaration sends (a container's ``password``, a VM's ``cipassword``) are checked
like any value and never repeated: not by the declaration's checks, not by the form check before a
request, not when a value is too long for one request.

PVE facts: pve-http-server ``src/PVE/APIServer/AnyEvent.pm`` refuses a request body over
``$limit_max_post`` (64 KiB) before any API method runs, so a password that long can never be
written, and a plan must say so rather than an apply fail on it; qemu-server ``$confdesc_cloudinit``
``cipassword`` and pve-container ``create_vm`` ``password`` are plain strings otherwise.
"""

from __future__ import annotations

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.lxc import schema as lxc_schema
from salt_proxmox.lxc.props import parse_declaration as parse_lxc
from salt_proxmox.pve.constraints import MAX_POST, Endpoint, Rule, check_form
from salt_proxmox.qemu import schema as qemu_schema
from salt_proxmox.qemu.props import parse_declaration as parse_qemu

#: A password whose every 8 characters are recognisable, so any clipped echo of it is found.
LONG = "Zq7#pass" * (MAX_POST // 8 + 16)


def echoes(text: str) -> bool:
    return "Zq7#pass" in text or "Zq7%23pass" in text


def problems(exc: pytest.ExceptionInfo[DeclarationError]) -> str:
    return "\n".join([str(exc.value), *exc.value.problems])


def test_a_cipassword_too_long_for_one_request_is_refused_at_parse_without_its_value() -> None:
    with pytest.raises(DeclarationError) as exc:
        parse_qemu("vm", vmid=150, node="pve1", target="lab", config={"cipassword": LONG})
    text = problems(exc)
    assert "cipassword" in text and "$limit_max_post" in text, text
    assert not echoes(text), text


def test_a_container_password_too_long_for_one_request_is_refused_at_parse_without_its_value() -> None:
    with pytest.raises(DeclarationError) as exc:
        parse_lxc(
            "ct",
            vmid=150,
            node="pve1",
            target="lab",
            config={"ostemplate": "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "password": LONG},
        )
    text = problems(exc)
    assert "password" in text and "$limit_max_post" in text, text
    assert not echoes(text), text


def test_sshkeys_too_long_for_one_request_are_refused_at_parse() -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq7Jx0s9Nn8sWQ2p5mE1cQH0b4aJXk0n4mZ8b1c2d3e ops@example"
    with pytest.raises(DeclarationError) as exc:
        parse_qemu("vm", vmid=150, node="pve1", target="lab", config={"sshkeys": "\n".join([key] * 1000)})
    assert "sshkeys" in problems(exc) and "$limit_max_post" in problems(exc)


@pytest.mark.parametrize(
    "endpoint", [qemu_schema.CREATE, lxc_schema.CREATE], ids=["qemu-create", "lxc-create"]
)
def test_the_form_check_never_repeats_a_secret_when_the_form_is_too_long(endpoint: Endpoint) -> None:
    key = "cipassword" if endpoint is qemu_schema.CREATE else "password"
    form = {"vmid": "150", key: LONG}
    with pytest.raises(DeclarationError) as exc:
        check_form(endpoint, form, presence=False, secrets={key})
    text = problems(exc)
    assert key in text and "$limit_max_post" in text and not echoes(text), text


def test_the_form_check_never_repeats_a_secret_its_rule_refuses() -> None:
    endpoint = Endpoint(
        "POST /x",
        (),
        lambda key: Rule(check=lambda value: f"{value!r} is not a password" if "#" in value else None),
    )
    with pytest.raises(DeclarationError) as exc:
        check_form(endpoint, {"password": "Zq7#pass"}, presence=False, secrets={"password"})
    text = problems(exc)
    assert "password" in text and not echoes(text), text
