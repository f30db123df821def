"""The registry's calls as Salt sees them: ``salt-call --local sys.doc``/``sys.argspec`` on the real loader
list and document every state call of every family (the generated ones, ``salt_proxmox.run.calls``, and
the hand-written ones alike), and a generated call runs against a fake cluster like the state it serves."""

from __future__ import annotations

import pytest

from salt_proxmox.registry import FAMILIES
from salt_proxmox.run.calls import generated
from tests.support.saltrun import salt_call, write_minion_config

pytestmark = pytest.mark.functional


@pytest.fixture
def config_dir(fresh_cluster, bao_creds, tmp_path):
    config_dir = tmp_path / "etc"
    write_minion_config(config_dir, fresh_cluster.url, fresh_cluster.cafile, openbao=bao_creds)
    return config_dir


def test_sys_doc_documents_every_family_call_with_a_cli_example(config_dir):
    docs, functions = {}, set()
    for module in sorted({family.module for family in FAMILIES}):
        found, _ = salt_call(config_dir, "sys.doc", module)
        docs.update(found)
        listed, _ = salt_call(config_dir, "sys.list_functions", module)
        functions.update(listed)
    wanted = {call.function for family in FAMILIES for call in family.calls.values()}
    wanted |= {f"proxmox.{made.name}" for made in generated("proxmox")}
    missing = sorted(name for name in wanted if "CLI Example" not in (docs.get(name) or ""))
    assert missing == [], "every call is documented with a CLI example"
    assert "salt-call sys.state_doc proxmox_acl" in docs["proxmox.acl_present"]
    assert "secrets_pillar" in docs["proxmox.realm_present"]
    assert wanted <= functions, "sys.list_functions lists them"


def test_sys_argspec_shows_a_generated_call_s_arguments(config_dir):
    spec, _ = salt_call(config_dir, "sys.argspec", "proxmox.acl_present")
    acl = spec["proxmox.acl_present"]
    assert acl["args"][:6] == ["name", "path", "role", "user", "group", "token"]
    assert acl["kwargs"] is True, "the family's keys are keyword arguments, refused by name when unknown"
    get, _ = salt_call(config_dir, "sys.argspec", "proxmox.storage_get")
    assert get["proxmox.storage_get"]["args"] == ["name", "target"]


def test_a_generated_call_plans_reads_and_refuses_like_its_state(config_dir, fresh_cluster):
    start = len(fresh_cluster.pve.requests)
    plan, _ = salt_call(config_dir, "proxmox.pool_present", "example", "comment=Example", "test=True")
    assert plan["result"] is None and plan["changes"], plan
    sent = fresh_cluster.pve.requests[start:]
    assert all(method == "GET" for method, _, _ in sent), "a plan writes nothing"
    local, _ = salt_call(config_dir, "proxmox.storage_get", "local")
    assert local["type"] == "dir", local
    refused, _ = salt_call(config_dir, "proxmox.pool_present", "example", "colour=red", "test=True")
    assert refused["result"] is False and "colour" in refused["comment"], refused
