"""The generic simple-object lifecycle and its first families (pools, roles, ACL entries), without a server.

Sources: pve-manager 9.2.11 ``PVE/API2/Pool.pm``; pve-access-control 9.1.1 ``src/PVE/API2/Role.pm``,
``src/PVE/API2/ACL.pm`` and ``src/PVE/AccessControl.pm``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from salt_proxmox.errors import DeclarationError, Refused
from salt_proxmox.ownership.rows import CREATING, row_key
from salt_proxmox.ownership.stores import MemoryStore
from salt_proxmox.pve.constraints import Endpoint, Rule, check_poolid
from salt_proxmox.pve.errors import PveError, PveUnreachable
from salt_proxmox.pve.facts import Release
from salt_proxmox.sdn import objects as sdn_objects
from salt_proxmox.simple import acl, lifecycle, pool, role
from salt_proxmox.simple import spec as simple_spec
from salt_proxmox.simple.spec import Call, Declared, ObjectSpec, exact_message, same_values
from salt_proxmox.storage import objects as storage_objects
from tests.support.stubs import TARGET, pve_context

# ------------------------------------------------------------------------------------------- pools


@pytest.mark.parametrize(
    ("poolid", "problem"),
    [
        ("prod", None),
        ("prod/web", None),  # nested pools, up to three levels (verify_poolname)
        ("a/b/c", None),
        ("a/b/c/d", "invalid characters"),
        ("9lives", "must start with a letter"),  # create_pool
        ("prod/9", "must start with a letter"),  # the leaf too
        ("pr od", "invalid characters"),
        ("", "invalid characters"),
    ],
)
def test_poolid_rule(poolid: str, problem: str | None) -> None:
    found = check_poolid(poolid)
    assert (found is None) if problem is None else (problem in found)


def test_pool_comment_zero_is_refused_because_pve_drops_it() -> None:
    """create_pool: `... = $param->{comment} if $param->{comment}`; write_user_config likewise."""
    with pytest.raises(DeclarationError, match="comment: PVE keeps a comment only when it is true"):
        pool.declare("s", TARGET, name="prod", comment="0")
    assert pool.declare("s", TARGET, name="prod", comment=None).values == {"comment": ""}
    assert pool.declare("s", TARGET, name="prod", comment=2026).values == {"comment": "2026"}


@pytest.mark.parametrize(
    ("answer", "comment"),
    [
        ([{"poolid": "prod", "comment": "Production", "members": []}], "Production"),
        ([{"poolid": "prod", "members": []}], ""),  # no comment key: none
        ([{"poolid": "prod"}], ""),
    ],
)
def test_pool_read(answer: object, comment: str) -> None:
    decl = pool.identify("s", TARGET, name="prod")
    assert pool.parse(answer, decl)["comment"] == comment


@pytest.mark.parametrize(
    "answer",
    [
        None,
        [],
        {},
        [{"poolid": "other"}],
        [{"poolid": "prod"}, {"poolid": "prod"}],
        [{"poolid": "prod", "comment": 3}],
    ],
)
def test_pool_malformed_read(answer: object) -> None:
    with pytest.raises(ValueError):
        pool.parse(answer, pool.identify("s", TARGET, name="prod"))


def test_pool_absence_is_the_exact_message() -> None:
    decl = pool.identify("s", TARGET, name="prod")
    assert pool.SPEC.is_absent(PveError("GET", "pools", 500, "pool 'prod' does not exist"), decl)
    assert not pool.SPEC.is_absent(PveError("GET", "pools", 500, "pool 'other' does not exist"), decl)
    assert not pool.SPEC.is_absent(PveError("GET", "pools", 403, "pool 'prod' does not exist"), decl)
    assert not pool.SPEC.is_absent(PveError("GET", "pools", 500, "pool 'prod' does not exist (cached)"), decl)


def test_pool_forms() -> None:
    decl = pool.declare("s", TARGET, name="prod", comment="")
    assert pool.SPEC.create(decl) == Call("POST", "pools", form={"poolid": "prod"})
    assert pool.SPEC.update(decl, {}) == Call(
        "PUT", "pools", form={"poolid": "prod", "comment": ""}, json=True
    ), "an empty comment is sent to clear it, as JSON: a form's comment= reaches PVE as not given"
    assert pool.SPEC.delete(decl, {}) == Call("DELETE", "pools", params={"poolid": "prod"})


class PoolPve:
    """Pools as pve-manager ``PVE/API2/Pool.pm`` keeps them. From 8.1 (``release``): ``index`` lists
    the pools (no members) or, with ``poolid``, answers a list holding that pool with its members
    (500 "pool 'x' does not exist" for a missing one); ``PUT``/``DELETE /pools`` take the poolid;
    ``create_pool`` refuses a nested pool whose parent does not exist; ``delete_pool`` a pool with
    sub-pools or guests; ``/pools/{poolid}`` is kept (deprecated) for a pool without ``/``. On 8.0
    (pve-manager 8.0.4) only ``/pools/{poolid}`` reads (an object without ``poolid``), updates and
    deletes; ``index`` refuses a ``poolid`` (``additionalProperties => 0``) and there is no ``PUT`` or
    ``DELETE /pools`` (pve-http-server: 501 "Method '...' not implemented")."""

    def __init__(self, pools: dict[str, dict], release: str = "9.0") -> None:
        self.pools = {name: {"comment": "", "vms": [], **entry} for name, entry in pools.items()}
        self.release = release

    def __call__(self, method: str, path: str, params: dict, form: dict) -> object:
        if (method, path) == ("GET", "version"):
            return {"release": self.release, "version": f"{self.release}.4"}
        legacy = self.release == "8.0"
        if path.startswith("pools/"):
            poolid = path.removeprefix("pools/")
            if "/" in poolid:
                raise PveError(method, path, 501, f"Method '{method} /{path}' not implemented")
        else:
            poolid = params.get("poolid") or form.get("poolid")
            if legacy and method in ("PUT", "DELETE"):
                raise PveError(method, path, 501, f"Method '{method} /pools' not implemented")
            if legacy and method == "GET" and "poolid" in params:
                raise PveError(
                    method,
                    path,
                    400,
                    "Parameter verification failed.",
                    {"poolid": "property is not defined in schema"},
                )
        if (method, path) == ("GET", "pools") and not poolid:
            return [
                {"poolid": name, "comment": entry["comment"]} for name, entry in sorted(self.pools.items())
            ]
        if method == "POST":
            if legacy and "/" in poolid:
                raise PveError(
                    method,
                    path,
                    400,
                    "Parameter verification failed.",
                    {"poolid": f"pool name '{poolid}' contains invalid characters"},
                )
            parent = poolid.rsplit("/", 1)[0]
            if "/" in poolid and parent not in self.pools:
                raise PveError(method, path, 500, f"parent '{parent}' of pool '{poolid}' does not exist")
            self.pools[poolid] = {"comment": form.get("comment", ""), "vms": []}
            return None
        if poolid not in self.pools:
            raise PveError(method, path, 500, f"pool '{poolid}' does not exist")
        if method == "GET":
            members = [
                {"type": "lxc", "vmid": vmid, "id": f"lxc/{vmid}"} for vmid in self.pools[poolid]["vms"]
            ]
            found = {"comment": self.pools[poolid]["comment"], "members": members}
            if legacy and path != "pools":
                return found
            found["poolid"] = poolid
            return found if path != "pools" else [found]
        if method == "PUT":
            self.pools[poolid]["comment"] = form.get("comment", self.pools[poolid]["comment"])
        elif method == "DELETE":
            del self.pools[poolid]
        return None


def test_pool_refusals_read_the_runs_shared_listing() -> None:
    """A plan creating a nested pool under a listed parent and destroying an empty pool reads
    ``GET /pools`` once for all its states: the refusals (pve-manager ``PVE/API2/Pool.pm``
    ``create_pool``'s parent, ``delete_pool``'s sub-pools) take the run's shared listing, and the
    parent in it needs no read of its own."""
    pve = PoolPve({"lab": {}})
    store = MemoryStore()
    assert lifecycle.present(pve_context(pve, store), pool.SPEC, False, "old", name="old").result is True
    ctx = pve_context(pve, store)
    assert lifecycle.present(ctx, pool.SPEC, True, "lab", name="lab", adopt=True).result is None
    assert lifecycle.present(ctx, pool.SPEC, True, "web", name="lab/web").result is None
    assert lifecycle.absent(ctx, pool.SPEC, True, "old", "destroy", name="old").result is None
    sent = [(method, path, params) for method, path, params, _ in ctx.client.sent]
    assert sent.count(("GET", "pools", {})) == 1, sent
    assert ("GET", "pools", {"poolid": "lab"}) not in sent, "the listed parent needs no read of its own"
    assert ctx.client.writes() == []


def test_pool_refusals_read_an_unlisted_parent_and_name_sub_pools() -> None:
    """A parent the listing leaves out (no Pool.Audit on it) is read on its own before the plan
    refuses; a pool with a sub-pool in the listing cannot be destroyed (``delete_pool``: "pool
    'lab' is not empty (contains pool 'lab/web')")."""
    pve = PoolPve({"lab": {}, "lab/web": {}})
    store = MemoryStore()
    assert lifecycle.present(pve_context(pve, store), pool.SPEC, False, "lab", name="lab", adopt=True).result
    ctx = pve_context(pve, store)
    orphan = lifecycle.present(ctx, pool.SPEC, True, "x", name="gone/x")
    assert orphan.result is False and "its parent pool gone does not exist" in orphan.comment[0]
    assert ("GET", "pools", {"poolid": "gone"}, {}) in ctx.client.sent
    full = lifecycle.absent(ctx, pool.SPEC, True, "lab", "destroy", name="lab")
    assert full.result is False and "pool lab still has members (pool lab/web)" in full.comment[0]
    assert [entry for entry in ctx.client.sent if entry[:3] == ("GET", "pools", {})] == [
        ("GET", "pools", {}, {})
    ]


@pytest.mark.parametrize(
    ("release", "nested"), [("8.0", False), ("8.1", True), ("8.4", True), ("9.0", True), ("9.2", True)]
)
def test_pools_nest_and_take_the_query_forms_from_pve_8_1(release: str, nested: bool) -> None:
    # pve-manager 8.1.0 PVE/API2/Pool.pm ("fix #1148: api: pools: support nested pools").
    assert Release(release).nested_pools is nested


def test_pool_calls_of_pve_8_0_take_the_poolid_in_the_path() -> None:
    decl = pool.declare("s", TARGET, name="prod", comment="")
    assert pool.SPEC_80.read(decl) == Call("GET", "pools/prod")
    assert pool.SPEC_80.update(decl, {}) == Call("PUT", "pools/prod", form={"comment": ""}, json=True)
    assert pool.SPEC_80.delete(decl, {}) == Call("DELETE", "pools/prod")
    assert pool.SPEC_80.create(decl) == pool.SPEC.create(decl), "create_pool is POST /pools on every release"
    assert pool.parse_object({"comment": "x", "members": []}, decl) == {"comment": "x", "members": []}
    with pytest.raises(ValueError):
        pool.parse_object([{"poolid": "prod"}], decl)


@pytest.mark.parametrize("release", ["8.0", "8.1", "9.0"])
def test_a_pool_lives_its_whole_life_on_every_release(release: str) -> None:
    """Create (read proves it absent), read back, change the comment, destroy (members read, then the
    read proves it gone): on PVE 8.0 with ``/pools/{poolid}`` only, from 8.1 with the query forms. The
    stub answers 8.0 as pve-manager 8.0.4 does: a ``poolid`` query is refused, ``PUT``/``DELETE
    /pools`` do not exist."""
    pve = PoolPve({}, release=release)
    store = MemoryStore()
    ctx = pve_context(pve, store)
    for test in (True, False):
        made = lifecycle.present(ctx, pool.SPEC, test, "p", name="prod", comment="one")
        assert made.result is (None if test else True), made.comment
    assert pve.pools["prod"]["comment"] == "one"
    changed = lifecycle.present(pve_context(pve, store), pool.SPEC, False, "p", name="prod", comment="two")
    assert changed.result is True and changed.changes, changed.comment
    assert pve.pools["prod"]["comment"] == "two"
    gone = lifecycle.absent(pve_context(pve, store), pool.SPEC, False, "p", "destroy", name="prod")
    assert gone.result is True, gone.comment
    assert pve.pools == {}
    legacy = release == "8.0"
    sent = [(method, path, params) for method, path, params, _ in ctx.client.sent]
    assert any(path == "pools/prod" for _, path, _ in sent) is legacy, sent
    assert any("poolid" in params for _, _, params in sent) is not legacy, sent


def test_a_nested_pool_on_pve_8_0_is_refused_at_plan() -> None:
    # pve-access-control before 8.0.7 (PVE 8.0) verify_poolname: no '/' ("contains invalid characters").
    pve = PoolPve({"lab": {}}, release="8.0")
    ctx = pve_context(pve)
    for test in (True, False):
        plan = lifecycle.present(ctx, pool.SPEC, test, "web", name="lab/web")
        assert plan.result is False and plan.changes == {}
        assert "runs PVE 8.0, which has no nested pools" in plan.comment[0], plan.comment
    assert ctx.client.writes() == []


def test_a_pool_judged_on_the_listing_reads_no_release() -> None:
    """The listing and the create are alike on every release: a plan that finds the pool listed and
    as declared asks nothing more, not even ``/version``."""
    pve = PoolPve({"prod": {"comment": "x"}}, release="8.0")
    ctx = pve_context(pve)
    plan = lifecycle.present(ctx, pool.SPEC, True, "p", name="prod", comment="x", adopt=True)
    assert plan.result is None, plan.comment
    assert [(method, path) for method, path, _, _ in ctx.client.sent] == [("GET", "pools")]


# ------------------------------------------------------------------------------------------- roles


@pytest.mark.parametrize(
    "privs",
    [
        ["VM.Audit", "Sys.Audit"],
        ["Sys.Audit", "VM.Audit", "VM.Audit"],
        "VM.Audit,Sys.Audit",
        "Sys.Audit; VM.Audit",
        "VM.Audit Sys.Audit",
        ["VM.Audit,Sys.Audit"],
    ],
)
def test_privileges_compare_as_a_set(privs: object) -> None:
    """split_list separators, order and duplicates are spelling, not a difference."""
    assert role.canonical_privs(privs) == "Sys.Audit,VM.Audit"


@given(
    st.lists(st.sampled_from(sorted(role.PRIVILEGES))), st.sampled_from([",", ";", " ", " , "]), st.randoms()
)
def test_any_spelling_of_a_privilege_set_is_one_canonical_value(names, separator, rnd):
    """What PVE reads back (``join(',', sort keys ...)`` in Role.pm index) equals the declaration."""
    shuffled = list(names)
    rnd.shuffle(shuffled)
    canonical = role.canonical_privs(separator.join(shuffled))
    assert canonical == role.canonical_privs(names) == ",".join(sorted(set(names)))
    assert role.parse(dict.fromkeys(names, 1), role.identify("s", TARGET, name="R"))["privs"] == canonical


@pytest.mark.parametrize("privs", [["VM.Audit", "VM.Fly"], "Sys.audit", 42, [1]])
def test_unknown_privilege_refused(privs: object) -> None:
    with pytest.raises(DeclarationError, match="privs"):
        role.canonical_privs(privs)


@pytest.mark.parametrize(
    ("roleid", "problem"),
    [
        ("SaltProxmoxRead", None),
        ("a.b-c_1", None),
        ("PVEAdmin", "built-in"),  # role_is_special
        ("pveCustom", "built-in"),  # create_role: ^PVE, case-insensitive
        ("Administrator", "built-in"),
        ("NoAccess", "built-in"),
        ("bad role", "invalid characters"),  # verify_rolename
    ],
)
def test_roleid_rule(roleid: str, problem: str | None) -> None:
    found = role.check_roleid(roleid)
    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize(
    ("answer", "privs"),
    [
        ({"VM.Audit": 1, "Sys.Audit": 1}, "Sys.Audit,VM.Audit"),
        ({}, ""),  # a role without privileges exists
        ({"VM.Audit": 1, "Sys.Audit": 0}, "VM.Audit"),
        ({"VM.Audit": True, "Sys.Audit": "1"}, "Sys.Audit,VM.Audit"),
        ({"VM.Brand.New": 1}, "VM.Brand.New"),  # a newer PVE's privilege is still a privilege
    ],
)
def test_role_read(answer: dict, privs: str) -> None:
    assert role.parse(answer, role.identify("s", TARGET, name="R"))["privs"] == privs


@pytest.mark.parametrize(
    "answer", [None, [], "VM.Audit", {"VM.Audit": 2}, {"not a priv": 1}, {"VM.Audit": None}]
)
def test_role_malformed_read(answer: object) -> None:
    with pytest.raises(ValueError):
        role.parse(answer, role.identify("s", TARGET, name="R"))


def test_role_forms_and_absence() -> None:
    decl = role.declare("s", TARGET, name="R", privs=["VM.Audit"])
    assert role.SPEC.create(decl) == Call("POST", "access/roles", form={"roleid": "R", "privs": "VM.Audit"})
    assert role.SPEC.update(decl, {}) == Call("PUT", "access/roles/R", form={"privs": "VM.Audit"}), (
        "no append: update_role replaces the whole set"
    )
    empty = role.declare("s", TARGET, name="R", privs=[])
    assert role.SPEC.create(empty).form == {"roleid": "R"}
    assert role.SPEC.update(empty, {}).form == {"privs": ""}
    assert role.SPEC.is_absent(PveError("GET", "p", 500, "role 'R' does not exist"), decl)
    assert not role.SPEC.is_absent(PveError("GET", "p", 500, "role 'r' does not exist"), decl), (
        "roleids are exact"
    )


# --------------------------------------------------------------------------------------------- ACL


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("/", "/"),
        ("//pool//prod/", "/pool/prod"),
        ("vms/100", "/vms/100"),
        ("/storage/local-zfs", "/storage/local-zfs"),
        ("", None),
        ("/a b", None),
    ],
)
def test_acl_path_normalised_as_pve_does(path: str, normal: str | None) -> None:
    assert acl.normalize_path(path) == normal


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/", True),
        ("/vms/100", True),
        ("/vms/99", False),
        ("/pool/prod/web", True),
        ("/foo", False),
        ("/nodes/pve1", True),
    ],
)
def test_acl_path_check(path: str, ok: bool) -> None:
    """check_path: only the object paths PVE knows; vmids have three digits or more."""
    assert (acl.check_path(path) is None) is ok


def test_acl_identity_and_principal() -> None:
    decl = acl.declare("s", TARGET, path="//", role="R", token="salt@pve!plan", propagate="0")
    assert decl.identity == "/:token:salt@pve!plan:R"
    assert decl.values == {"propagate": False}
    with pytest.raises(DeclarationError, match="exactly one"):
        acl.declare("s", TARGET, path="/", role="R", user="a@pve", token="a@pve!tk")
    with pytest.raises(DeclarationError, match="exactly one"):
        acl.declare("s", TARGET, path="/", role="R")
    with pytest.raises(DeclarationError, match="token"):
        acl.declare("s", TARGET, path="/", role="R", token="no-realm!t")
    with pytest.raises(DeclarationError, match="propagate"):
        acl.declare("s", TARGET, path="/", role="R", group="admins", propagate="maybe")


def test_acl_read_finds_the_entry_or_none() -> None:
    decl = acl.declare("s", TARGET, path="/", role="R", token="a@pve!tk")
    rows = [
        {"path": "/", "type": "token", "ugid": "a@pve!tk", "roleid": "Other", "propagate": 1},
        {"path": "/", "type": "token", "ugid": "a@pve!tk", "roleid": "R", "propagate": 0},
    ]
    assert acl.parse(rows, decl) == {"propagate": False}
    assert acl.parse(rows[:1], decl) is None
    assert acl.parse([{"path": "/", "type": "token", "ugid": "a@pve!tk", "roleid": "R"}], decl) == {
        "propagate": True
    }, "propagate defaults to 1 (acl-propagate)"


@pytest.mark.parametrize(
    "rows",
    [
        None,
        {},
        [None],
        [{"path": "/", "type": "robot", "ugid": "x", "roleid": "R"}],
        [{"path": "/", "type": "user", "ugid": "", "roleid": "R"}],
        [{"type": "user", "ugid": "x", "roleid": "R"}],
        [{"path": "/", "type": "user", "ugid": "x", "roleid": "R", "propagate": 2}],
    ],
)
def test_acl_malformed_listing(rows: object) -> None:
    with pytest.raises(ValueError):
        acl.parse(rows, acl.declare("s", TARGET, path="/", role="R", user="a@pve"))


def _acl_pve(entries: list[dict], held: dict, roles=("R",), users=(("a@pve", ("tk",)),), groups=()) -> object:
    """ACL entries as update_acl keeps them, plus the role, user (with tokens) and group indexes."""

    def answer(method, path, params, form):
        if (method, path) == ("GET", "access/acl"):
            return entries
        if (method, path) == ("GET", "access/permissions"):
            return held
        if (method, path) == ("GET", "access/roles"):
            return [{"roleid": name} for name in roles]
        if (method, path) == ("GET", "access/users"):
            return [{"userid": user, "tokens": [{"tokenid": t} for t in tokens]} for user, tokens in users]
        if (method, path) == ("GET", "access/groups"):
            return [{"groupid": name} for name in groups]
        if (method, path) == ("PUT", "access/acl"):
            key = (form["path"], "token", form["tokens"], form["roles"])
            entries[:] = [e for e in entries if (e["path"], e["type"], e["ugid"], e["roleid"]) != key]
            if form.get("delete") != "1":
                entries.append(dict(zip(("path", "type", "ugid", "roleid"), key, strict=True), propagate=1))
            return None
        raise AssertionError((method, path))

    return answer


def test_acl_absence_needs_sys_audit_on_access() -> None:
    """read_acl filters by Permissions.Modify unless the caller holds Sys.Audit on /access."""
    blind = pve_context(_acl_pve([], {"/vms": {"VM.Audit": 1}}))
    outcome = lifecycle.present(blind, acl.SPEC, True, "s", path="/", role="R", token="a@pve!tk")
    assert outcome.result is False and "Sys.Audit on /access" in outcome.comment[0]
    seeing = pve_context(_acl_pve([], {"/": {"Sys.Audit": 1, "VM.Audit": 1}}))
    plan = lifecycle.present(seeing, acl.SPEC, True, "s", path="/", role="R", token="a@pve!tk")
    assert plan.result is None and "created" in plan.changes
    done = lifecycle.present(seeing, acl.SPEC, False, "s", path="/", role="R", token="a@pve!tk")
    assert done.result is True, done.comment
    assert seeing.client.writes() == [
        ("PUT", "access/acl", {}, {"path": "/", "roles": "R", "tokens": "a@pve!tk", "propagate": "1"})
    ]


AUDITOR = {"/": {"Sys.Audit": 1}}


@pytest.mark.parametrize(
    ("names", "said"),
    [
        pytest.param({"role": "Nope", "token": "a@pve!tk"}, "role Nope does not exist", id="role"),
        pytest.param({"role": "R", "user": "b@pve"}, "(`user 'b@pve' does not exist`)", id="user"),
        pytest.param(
            {"role": "R", "token": "a@pve!other"}, "(`no such token 'other' for user 'a@pve'`)", id="token"
        ),
        pytest.param({"role": "R", "group": "ops"}, "(`group 'ops' does not exist`)", id="group"),
    ],
)
def test_acl_entry_naming_what_pve_lacks_is_refused_at_plan(names: dict, said: str) -> None:
    # pve-access-control API2/ACL.pm update_acl dies for a role, user, group or token it lacks.
    ctx = pve_context(_acl_pve([], AUDITOR))
    for test in (True, False):
        outcome = lifecycle.present(ctx, acl.SPEC, test, "s", path="/", **names)
        assert (outcome.result, outcome.changes) == (False, {})
        assert said in outcome.comment[0]
    assert ctx.client.writes() == []


def test_acl_names_are_read_once_per_run() -> None:
    ctx = pve_context(_acl_pve([], AUDITOR))
    for token in ("a@pve!tk", "a@pve!x", "a@pve!y"):
        lifecycle.present(ctx, acl.SPEC, True, "s", path="/", role="R", token=token)
    reads = [path for method, path, _, _ in ctx.client.sent if path in ("access/roles", "access/users")]
    assert reads == ["access/roles", "access/users"]


def test_acl_entry_naming_a_role_this_run_creates_is_planned() -> None:
    ctx = pve_context(_acl_pve([], AUDITOR, roles=()))
    simple_spec.expect(ctx, "role", "Fresh")
    assert (
        lifecycle.present(ctx, acl.SPEC, True, "s", path="/", role="Fresh", token="a@pve!tk").result is None
    )


# ------------------------------------------------------------------------------ the lifecycle itself


def _thing_spec(update=True, constraint=None) -> tuple[ObjectSpec, dict]:
    """A minimal family over a dict: {name: {"size": str}}; absence is 500 "no thing 'x'"."""
    things: dict[str, dict] = {}
    rules = {"name": Rule(), "size": Rule(check=constraint)}

    def declare(state_id, target, name=None, size="1", adopt=False):
        return Declared(state_id, target, name, f"thing {name}", {"name": name}, {"size": str(size)}, adopt)

    def identify(state_id, target, name=None):
        return Declared(state_id, target, name, f"thing {name}", {"name": name})

    def parse(data, decl):
        if not isinstance(data, dict) or not isinstance(data.get("size"), str):
            raise ValueError("expected {size}")
        return {"size": data["size"]}

    spec = ObjectSpec(
        family="thing",
        noun="thing",
        declare=declare,
        identify=identify,
        read=lambda d: Call("GET", f"things/{d.names['name']}"),
        absence="500 no thing",
        is_absent=exact_message(500, "no thing '{name}'"),
        parse=parse,
        create=lambda d: Call("POST", "things", form={"name": d.names["name"], "size": d.values["size"]}),
        create_endpoint=Endpoint("POST /things", ("name",), rules.get),
        update=(lambda d, live: Call("PUT", f"things/{d.names['name']}", form={"size": d.values["size"]}))
        if update
        else None,
        update_endpoint=Endpoint("PUT /things", (), rules.get),
        delete=lambda d, live: Call("DELETE", f"things/{d.names['name']}"),
        matches=same_values,
    )
    return spec, things


def _thing_pve(things: dict, fail: PveError | None = None, body: object = None):
    def answer(method, path, params, form):
        name = path.split("/", 1)[1] if "/" in path else form.get("name")
        if method == "GET":
            if fail is not None:
                raise fail
            if body is not None:
                return body
            if name not in things:
                raise PveError(method, path, 500, f"no thing '{name}'")
            return dict(things[name])
        if method in ("POST", "PUT"):
            things[name] = {"size": form["size"]}
        if method == "DELETE":
            things.pop(name, None)
        return None

    return answer


def test_no_write_when_it_matches_and_read_back_after_a_write() -> None:
    spec, things = _thing_spec()
    ctx = pve_context(_thing_pve(things))
    created = lifecycle.present(ctx, spec, False, "s", name="a", size="2")
    assert created.result is True
    assert [(m, p) for m, p, _, _ in ctx.client.sent] == [
        ("GET", "things/a"),
        ("POST", "things"),
        ("GET", "things/a"),
    ]
    ctx.client.sent.clear()
    same = lifecycle.present(ctx, spec, False, "s", name="a", size="2")
    assert (same.result, same.changes) == (True, {})
    assert [m for m, _, _, _ in ctx.client.sent] == ["GET"], "one read, no write, no read-back"


def test_a_difference_left_after_the_write_fails_naming_the_key() -> None:
    spec, things = _thing_spec()

    def stubborn(method, path, params, form):
        if method == "PUT":
            return None  # PVE said yes and changed nothing
        return _thing_pve(things)(method, path, params, form)

    things["a"] = {"size": "1"}
    store = MemoryStore({row_key(TARGET, "thing", "a"): {"phase": "owned", "state_id": "s"}})
    outcome = lifecycle.present(pve_context(stubborn, store), spec, False, "s", name="a", size="2")
    assert outcome.result is False and "size still differ" in outcome.comment[-1]


def test_no_update_path_or_empty_form_refuses() -> None:
    spec, things = _thing_spec(update=False)
    things["a"] = {"size": "1"}
    store = MemoryStore({row_key(TARGET, "thing", "a"): {"phase": "owned", "state_id": "s"}})
    ctx = pve_context(_thing_pve(things), store)
    outcome = lifecycle.present(ctx, spec, False, "s", name="a", size="2")
    assert outcome.result is False and "cannot change that in place" in outcome.comment[0]
    assert ctx.client.writes() == []


def test_vendor_constraints_refuse_before_any_write() -> None:
    spec, things = _thing_spec(constraint=lambda value: "too big" if int(value) > 9 else None)
    ctx = pve_context(_thing_pve(things))
    plan = lifecycle.present(ctx, spec, True, "s", name="a", size="10")
    done = lifecycle.present(ctx, spec, False, "s", name="a", size="10")
    for outcome in (plan, done):
        assert outcome.result is False and "POST /things: size: too big" in outcome.comment[0]
    assert ctx.client.writes() == []


@pytest.mark.parametrize(
    "fail",
    [
        PveError("GET", "p", 403, "Permission check failed (/things, Sys.Audit)"),
        PveError("GET", "p", 500, "got timeout"),
        PveError("GET", "p", 500, "no thing 'b'"),  # about another object
    ],
)
def test_no_family_folds_a_failed_read_into_absent(fail: PveError) -> None:
    spec, things = _thing_spec()
    ctx = pve_context(_thing_pve(things, fail=fail))
    outcome = lifecycle.present(ctx, spec, False, "s", name="a")
    assert outcome.result is False and ctx.client.writes() == []


@pytest.mark.parametrize("body", [[], "a", {"size": 3}])
def test_malformed_read_is_an_error(body: object) -> None:
    spec, things = _thing_spec()
    ctx = pve_context(_thing_pve(things, body=body))
    outcome = lifecycle.present(ctx, spec, False, "s", name="a")
    assert outcome.result is False and "malformed answer" in outcome.comment[0]
    assert ctx.client.writes() == []


def test_creating_row_finishes_when_it_matches_and_refuses_when_not() -> None:
    spec, things = _thing_spec()
    things["a"] = {"size": "2"}
    store = MemoryStore({row_key(TARGET, "thing", "a"): {"phase": CREATING, "state_id": "s"}})
    ctx = pve_context(_thing_pve(things), store)
    finished = lifecycle.present(ctx, spec, False, "s", name="a", size="2")
    assert finished.result is True and finished.changes == {"ownership": {"old": CREATING, "new": "owned"}}
    store.rows[row_key(TARGET, "thing", "a")]["phase"] = CREATING
    differs = lifecycle.present(ctx, spec, False, "s", name="a", size="3")
    assert differs.result is False and "may not be ours" in differs.comment[0]
    assert "declare adopt: true" in differs.comment[0] and ctx.client.writes() == []
    # The remedy the refusal names works: adopt: true takes it over as it is and writes what differs.
    adopted = lifecycle.present(ctx, spec, False, "s", name="a", size="3", adopt=True)
    assert adopted.result is True, adopted.comment
    assert store.rows[row_key(TARGET, "thing", "a")]["phase"] == "owned"
    assert things["a"]["size"] == "3"


@pytest.mark.parametrize(
    "failure",
    [
        PveError("POST", "things", 500, "create thing failed: thing 'a' already exists"),
        # No member accepted the connection: the request was never sent, so nothing was created.
        PveUnreachable("POST things: no member of target lab answered"),
    ],
    ids=["pve-refused", "no-member-answered"],
)
def test_create_that_never_started_restores_the_row(failure: Exception) -> None:
    spec, things = _thing_spec()

    def refusing(method, path, params, form):
        if method == "POST":
            raise failure
        return _thing_pve(things)(method, path, params, form)

    store = MemoryStore()
    outcome = lifecycle.present(pve_context(refusing, store), spec, False, "s", name="a")
    assert outcome.result is False and store.rows == {}


def test_absent_retain_forgets_and_destroy_deletes_only_ours() -> None:
    spec, things = _thing_spec()
    ctx = pve_context(_thing_pve(things))
    lifecycle.present(ctx, spec, False, "s", name="a", size="2")
    plan = lifecycle.absent(ctx, spec, True, "s", "retain", name="a")
    assert plan.result is None and ctx.ownership.store.rows
    kept = lifecycle.absent(ctx, spec, False, "s", "retain", name="a")
    assert kept.result is True and ctx.ownership.store.rows == {} and "a" in things
    refused = lifecycle.absent(ctx, spec, False, "s", "destroy", name="a")
    assert refused.result is False and "not recorded as ours" in refused.comment[0] and "a" in things
    bad = lifecycle.absent(ctx, spec, False, "s", "forever", name="a")
    assert bad.result is False and "removal" in bad.comment[0]


@pytest.mark.parametrize(
    ("spec", "name", "path", "privileges"),
    [
        # pve-storage API2/Storage/Config.pm index: a storage is listed to Datastore.Audit or
        # Datastore.AllocateSpace on /storage/<id>.
        pytest.param(
            storage_objects.SPEC, "nas", "/storage/nas", ("Datastore.Audit", "Datastore.AllocateSpace")
        ),
        # pve-network API2/Network/SDN/Zones.pm index: a zone is listed to SDN.Audit or SDN.Allocate.
        pytest.param(sdn_objects.ZONE, "lab", "/sdn/zones/lab", ("SDN.Audit", "SDN.Allocate")),
    ],
    ids=["storage", "sdn-zone"],
)
def test_a_filtered_listing_proves_absence_only_to_a_credential_that_may_audit_the_object(
    spec, name, path, privileges
) -> None:
    decl = spec.identify("s", TARGET, name=name)
    for held, proven in (({}, False), ({"Sys.Audit": 1}, False), *(({p: 1}, True) for p in privileges)):
        ctx = pve_context(lambda method, p, params, form, held=held: {path: held})
        if proven:
            spec.confirm_absent(ctx, ctx.broker.read(), decl)
        else:
            with pytest.raises(Refused, match="absence is not proven"):
                spec.confirm_absent(ctx, ctx.broker.read(), decl)
        assert ctx.client.sent[-1][:3] == ("GET", "access/permissions", {"path": path})
