"""docs/adding-a-family.md stays true: every path it names exists, and its worked example (the role
family) is what the registry, the state file, the formula and the conformance examples hold."""

from __future__ import annotations

import re
from pathlib import Path

from salt_proxmox.registry import FAMILIES, family_of
from tests.conformance.examples import EXAMPLES
from tests.support.formula import formula

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "adding-a-family.md").read_text()


def test_every_path_the_page_names_exists():
    paths = set(
        re.findall(r"`((?:salt_proxmox|_states|_modules|_output|formula|tests|docs)/[\w./-]+)`", PAGE)
    )
    assert len(paths) >= 10, "the page names the files a family is made of"
    assert sorted(path for path in paths if not (REPO / path).exists()) == []


def test_the_worked_example_is_the_registry_s_role_family():
    role = family_of("proxmox_role")
    assert '_simple("role", "simple.role", "roles"),' in (REPO / "salt_proxmox" / "registry.py").read_text()
    assert (role.section, role.prefix, role.kinds[0].spec) == (
        "proxmox:roles",
        "proxmox-role-",
        "salt_proxmox.simple.role:SPEC",
    )
    assert 'return __salt__["proxmox.run_state"](globals(), "present", locals())' in PAGE
    assert (
        "def present(name, privs=None, target=None, adopt=False, **kwargs):"
        in (REPO / "_states" / "proxmox_role.py").read_text()
    )
    assert any(row[0] == "proxmox:roles" and row[2] == "proxmox_role" for row in formula().SECTIONS)
    assert "role" in EXAMPLES and role in FAMILIES
