"""The thin Salt skins of the alias, pool, role, ACL and policy states: each passes Salt's ``test`` flag, the
declaring state's id (``__low__['__id__']``) and every key it was given (unknown ones included, for the
library to refuse by name) to its execution module, and nothing else. ``__salt__`` is a recorder."""

from __future__ import annotations

import pytest

from tests.support.salt_modules import Recorder, load

CASES = [
    ("proxmox_firewall_alias", "proxmox.firewall_alias_present", ("web",), {"cidr": "10.0.0.0/24"}),
    ("proxmox_pool", "proxmox.pool_present", ("prod",), {"comment": "Production"}),
    ("proxmox_role", "proxmox.role_present", ("R",), {"privs": ["VM.Audit"]}),
    ("proxmox_acl", "proxmox.acl_present", ("read", "/", "R"), {"token": "a@pve!tk"}),
    ("openbao_policy", "openbao.policy_present", ("p",), {"fragments": ['path "a" {}']}),
]


@pytest.mark.parametrize(("state", "fun", "args", "kwargs"), CASES)
@pytest.mark.parametrize("test", [True, False])
def test_present_passes_test_state_id_and_every_key(state, fun, args, kwargs, test):
    salt = Recorder(fun)
    module = load("_states", state, salt, test, low={"__id__": f"{state}-id", "name": args[0]})
    assert module.__virtual__() == state
    module.present(*args, colour="red", __pub_fun="state.apply", **kwargs)
    ((called, _, passed),) = salt.calls
    assert called == fun
    assert passed["test"] is test
    assert passed["state_id"] == f"{state}-id"
    assert passed["colour"] == "red", "an unknown key reaches the library, which refuses it by name"
    assert "__pub_fun" not in passed


@pytest.mark.parametrize(("state", "fun", "args", "kwargs"), CASES)
def test_absent_passes_the_state_id(state, fun, args, kwargs):
    absent_fun = fun.replace("_present", "_absent")
    salt = Recorder(fun, absent_fun)
    module = load("_states", state, salt, True, low={"__id__": "gone"})
    module.absent(*args)
    ((called, _, passed),) = salt.calls
    assert (called, passed["state_id"], passed["test"]) == (absent_fun, "gone", True)


def test_state_not_available_without_its_execution_module():
    module = load("_states", "proxmox_pool", {}, True)
    assert module.__virtual__()[0] is False


def test_policy_module_fetches_salt_files_with_cp_get_file_str():
    fetched: list[tuple[str, str]] = []

    def get_file_str(url, saltenv="base"):
        fetched.append((url, saltenv))
        return 'path "a/*" {\n  capabilities = ["read"]\n}\n' if url == "salt://p.hcl" else False

    module = load("_modules", "openbao", {"cp.get_file_str": get_file_str}, True)
    assembled = module.policy_assemble(["salt://p.hcl", '# inline\npath "b" {}'], saltenv="dev")
    assert fetched == [("salt://p.hcl", "dev")]
    assert assembled["path_grants"] == 2 and assembled["text"].endswith('path "b" {}\n')
    from salt.exceptions import CommandExecutionError

    with pytest.raises(CommandExecutionError, match=r"fragments\[0\]: salt://missing.hcl was not found"):
        module.policy_assemble(["salt://missing.hcl"])


@pytest.mark.parametrize(
    ("state", "fun", "args", "kwargs"),
    [*CASES, ("proxmox_lxc", "proxmox.lxc_present", ("web",), {"vmid": 150, "node": "pve1"})],
)
@pytest.mark.parametrize("which", ["present", "absent"])
def test_states_pass_the_whole_run_through(state, fun, args, kwargs, which):
    """Salt injects ``__low__`` and ``__lowstate__`` into state modules only; the execution module
    sees the run's other declarations because the state hands both over unchanged."""
    fun = fun.replace("_present", f"_{which}")
    salt = Recorder(fun)
    this = {"__id__": "one", "state": state, "fun": which, "name": args[0]}
    lowstate = [this, {"__id__": "two", "state": state, "fun": "present", "name": args[0]}]
    module = load("_states", state, salt, True, low=this)
    module.__lowstate__ = lowstate
    if which == "absent" and state == "proxmox_lxc":
        kwargs = {"vmid": 150, "node": "pve1"}
    elif which == "absent":
        kwargs = {}
    getattr(module, which)(*args, **kwargs)
    ((called, _, passed),) = salt.calls
    assert called == fun
    assert passed["__low__"] is this and passed["__lowstate__"] is lowstate


@pytest.mark.parametrize(
    ("state", "fun", "args", "library"),
    [
        ("proxmox_network", "applied", ("network of pve1", "pve1"), "salt_proxmox.network.apply"),
        ("proxmox_sdn", "applied", ("sdn",), "salt_proxmox.sdn.apply"),
    ],
)
def test_every_state_enters_its_run_the_applies_too(tmp_path, monkeypatch, state, fun, args, library):
    """A minion may keep ``__context__`` from one run to the next: what a run learned (a failed node
    apply stops the later ones, planned stagings) is kept with the run's key and dropped when another
    run begins (``RunMemo.begin``). An apply that never began its run read the last run's memo."""
    import importlib

    from salt_proxmox.outcome import Outcome

    seen: list[tuple[object, dict]] = []

    def applied(ctx, test, state_id, **_):
        seen.append((ctx.memo.run, dict(ctx.memo)))
        return Outcome()

    monkeypatch.setattr(importlib.import_module(library), "applied", applied)
    token = {"token_id": "salt@pve!plan", "secret": "unused"}
    credentials = {"source": "static", "read": token, "provision": token}
    targets = {"lab": {"members": ["https://127.0.0.1:9"], "credentials": credentials}}
    config = {"proxmox:targets": targets, "proxmox:ownership_file": str(tmp_path / "rows.json")}
    salt = Recorder()
    salt["config.get"] = lambda key, default=None: config.get(key, default)
    proxmox = load("_modules", "proxmox", salt, False)
    proxmox.__grains__ = {}
    salt["proxmox.network_applied"] = proxmox.network_applied
    salt["proxmox.sdn_applied"] = proxmox.sdn_applied
    salt["proxmox.run_state"] = proxmox.run_state
    for run in ("first run", "second run"):
        low = {"__id__": "apply", "state": state, "fun": fun, "name": args[0]}
        module = load("_states", state, salt, False, low=low)
        module.__lowstate__ = [low]
        module.__instance_id__ = run
        ret = getattr(module, fun)(*args)
        assert ret["result"] is True, ret
        memo = proxmox.__context__["salt_proxmox.memo/lab"]
        memo["salt_proxmox.apply_failed/lab"] = f"the apply of {run} failed"
    assert seen == [("first run", {}), ("second run", {})], "each apply served its own run, from scratch"


@pytest.mark.parametrize("test", [True, False])
def test_the_formula_refusal_fails_in_a_plan_as_in_an_apply(test):
    """The formula's failing state (``REFUSED``): Salt 3006's ``test.configurable_test_state`` has no
    ``allow_test_mode_failure`` (the run fails: "'allow_test_mode_failure' is an invalid keyword
    argument") and answers result True under test=True; this one fails on every Salt, needing nothing."""
    module = load("_states", "proxmox_pillar", {}, test)
    ret = module.refused(
        "pillar proxmox:lxcs", "pillar proxmox has unknown section(s) lxcs. Nothing was written."
    )
    assert ret == {
        "name": "pillar proxmox:lxcs",
        "result": False,
        "changes": {},
        "comment": "pillar proxmox has unknown section(s) lxcs. Nothing was written.",
    }
