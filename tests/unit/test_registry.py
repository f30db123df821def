"""One registry of families (``salt_proxmox/registry.py``): the state modules, the execution modules'
state calls, the formula's sections, the outputter's family names and the docs' table are the registry's,
or pinned to it here. A ``_states`` file, a formula section or an outputter family the registry does not
have fails a test, and so does a registered family missing from any of them."""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import pytest

from salt_proxmox import registry
from salt_proxmox.access import realm, user
from salt_proxmox.datacenter import acme, acme_account, metrics, options
from salt_proxmox.registry import FAMILIES, PILLAR_STATE
from salt_proxmox.storage.types import LEGACY_SENSITIVE
from tests.conformance.examples import EXAMPLES, examples_of
from tests.support.formula import formula
from tests.support.salt_modules import load

REPO = Path(__file__).resolve().parents[2]
SKIN = '__salt__["proxmox.run_state"](globals(), "{fun}", locals())'


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _public_functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {
        node.name: node
        for node in _tree(path).body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
    }


def _outputter():
    spec = importlib.util.spec_from_file_location("proxmox_plan", REPO / "_output" / "proxmox_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_state_module_is_registered_and_every_registered_one_exists():
    on_disk = {path.stem for path in (REPO / "_states").glob("*.py") if path.stem != "__init__"}
    assert on_disk == set(registry.STATE_MODULES)
    assert len(registry.STATE_MODULES) == len(set(registry.STATE_MODULES))
    assert len({family.name for family in FAMILIES}) == len(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_a_family_state_module_has_the_registered_functions_each_one_skin_call(family):
    """Each state function is its signature, its docstring and the one call of the skin."""
    functions = _public_functions(REPO / "_states" / f"{family.state}.py")
    assert set(functions) == set(family.calls)
    for name, node in functions.items():
        body = node.body
        assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), f"{name}: docstring"
        assert len(body) == 2 and isinstance(body[1], ast.Return), f"{name}: one return after the docstring"
        assert ast.unparse(body[1].value) == SKIN.format(fun=name).replace('"', "'")
        kwarg = node.args.kwarg
        assert kwarg is None or kwarg.arg == "kwargs", "the skin reads the extra keys under kwargs"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_each_registered_call_is_a_function_of_its_execution_module(family):
    """A call naming its library run is generated when the module loads and written nowhere by hand; one
    without (guests, policies) is written in ``_modules/<module>.py``."""
    loaded = load("_modules", family.module, {}, False)
    written = _public_functions(REPO / "_modules" / f"{family.module}.py")
    for call in family.calls.values():
        module, _, function = call.function.partition(".")
        assert module == family.module
        assert callable(getattr(loaded, function, None)), call.function
        assert (function in written) is (call.run is None), call.function


def test_no_family_adds_a_line_to_the_execution_modules(monkeypatch):
    """A family registered with a spec and nothing else gets its present, absent and get functions, with
    their arguments and a CLI example, from the registry alone (``salt_proxmox.run.calls``)."""
    source = (REPO / "_modules" / "proxmox.py").read_text()
    extra = registry.Family(
        name="example_thing",
        state="proxmox_example_thing",
        module="proxmox",
        kinds=(registry.Kind("example_thing", spec="salt_proxmox.simple.pool:SPEC"),),
        section="proxmox:example_things",
        prefix="proxmox-example-thing-",
    )
    monkeypatch.setattr(registry, "FAMILIES", (*FAMILIES, extra))
    loaded = load("_modules", "proxmox", {}, False)
    assert "example_thing" not in source
    for function in ("example_thing_present", "example_thing_absent", "example_thing_get"):
        made = getattr(loaded, function)
        assert made.__module__ == loaded.__name__, "Salt's loader packs only the module's own functions"
        assert f"salt-call proxmox.{function} <name>" in made.__doc__
    assert str(inspect.signature(loaded.example_thing_absent)) == (
        "(name, test=False, target=None, removal='retain', state_id=None, **declared)"
    )


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_each_kind_is_declared_by_its_own_functions_and_names_its_rows(family):
    for kind in family.kinds:
        assert {kind.present, kind.absent} <= set(family.calls)
        assert family.kind_of(kind.present) is kind and family.kind_of(kind.absent) is kind
        assert registry.family_declaring(kind.name) is family
        if kind.spec is not None:
            assert kind.load().family == kind.name, "the ObjectSpec's ownership rows are the kind's"
    assert family.kind_of("applied") is None


def test_the_guest_families_are_the_registered_ones():
    guests = registry.guests()
    assert set(guests) == {family.name for family in FAMILIES if family.guest}
    for kind, guest in guests.items():
        family = registry.family_of(guest.state)
        assert (family.name, family.kinds[0].name) == (kind, kind)


def test_the_formula_runs_the_registered_families_in_their_order():
    module = formula()
    sections = [(path, prefix, state) for path, prefix, state, *_ in module.SECTIONS]
    # Node networks and SDN (NESTED) run right before the guests; what needs the guests (backup jobs)
    # after them, then the firewall (LATE), then what a guest entry nests (its snapshots: each requires
    # its guest).
    first_guest = next(at for at, section in enumerate(sections) if section[0] in module.GUESTS)
    before, rest = sections[:first_guest], sections[first_guest:]
    nested = [*before, *module.NESTED, *rest, *module.LATE, *module.GUEST_NESTED]
    assert nested == [(f.section, f.prefix, f.state) for f in FAMILIES]
    assert f"{PILLAR_STATE}.refused" == module.REFUSED
    # Secrets are the guests' and the storage definitions' (pve-storage Plugin.pm sensitive_properties),
    # a user's password and a realm's bind password and client key (pve-access-control Auth/*.pm), a metric
    # server's token (pve-manager API2/Cluster/MetricServer.pm extract_sensitive_params).
    assert set(module.SECRETS) == {family.section for family in FAMILIES if family.guest} | {
        "proxmox:storage",
        "proxmox:users",
        "proxmox:realms",
        "proxmox:metric_servers",
        "proxmox:cluster_options",
        "proxmox:acme:plugins",
        "proxmox:acme:accounts",
        "proxmox:certificates",
    }
    assert set(module.SECRETS["proxmox:storage"]) == LEGACY_SENSITIVE
    assert set(module.SECRETS["proxmox:users"]) == set(user.SECRETS)
    assert set(module.SECRETS["proxmox:realms"]) == set(realm.SECRETS)
    assert set(module.SECRETS["proxmox:metric_servers"]) == set(metrics.SECRETS)
    # http_proxy may hold a password (pve-cluster DataCenterConfig.pm: 'http://username:password@host').
    assert set(module.SECRETS["proxmox:cluster_options"]) == set(options.SECRETS)
    # An ACME plugin's data holds its DNS API's credentials (pve-manager API2/ACMEPlugin.pm: Sys.Modify even
    # to read it).
    assert set(module.SECRETS["proxmox:acme:plugins"]) == set(acme.SECRETS)
    # An ACME account's EAB HMAC key (pve-manager API2/ACMEAccount.pm register_account eab-hmac-key).
    assert set(module.SECRETS["proxmox:acme:accounts"]) == set(acme_account.SECRETS)


def test_the_outputter_names_each_family_as_the_registry_does():
    plan = _outputter()
    assert {family.state: plan.family(family.state) for family in FAMILIES} == {
        family.state: family.name for family in FAMILIES
    }
    assert plan.family(PILLAR_STATE) == "pillar"


def test_the_design_document_shows_the_registry():
    """docs/design.md §2 holds ``python -m salt_proxmox.registry`` verbatim."""
    assert registry.markdown() in (REPO / "docs" / "design.md").read_text()


def test_the_conformance_examples_are_of_registered_kinds_and_every_kind_has_them():
    kinds = [kind.name for family in FAMILIES for kind in family.kinds]
    assert list(EXAMPLES) == kinds


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_every_family_brings_the_declarations_a_conformance_run_needs(family):
    examples = examples_of(family.kinds[0].name)
    present = {kind.present for kind in family.kinds}
    for declaration in (examples.create, examples.update, examples.clear):
        assert isinstance(declaration.get("name"), str) and declaration["name"]
    assert examples.create != examples.update and examples.create != examples.clear
    assert examples.delete["name"] == examples.create["name"]
    assert {"salt keyword", "unknown key"} <= set(examples.bad)
    for fun, declaration, key in examples.bad.values():
        assert fun in family.calls and (fun in present or fun.endswith("absent"))
        assert key in declaration, "a bad input names the key it is refused for"


def test_a_lookup_of_what_is_not_registered_names_what_is():
    with pytest.raises(LookupError, match=r"proxmox_tape: no such state module .*proxmox_lxc"):
        registry.family_of("proxmox_tape")
    with pytest.raises(LookupError, match="tape: no such kind"):
        registry.kind_named("tape")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_every_family_supplies_its_export_and_keys_its_rows(family):
    """``proxmox.export`` reads every registered family back as pillar, and ``proxmox.owned`` and a
    plan's note key every family's declarations: a family (an ``ObjectSpec`` without
    ``export_names``, a lifecycle of its own no exporter serves) fails here by name."""
    from salt_proxmox.export.pillar import exporter

    for kind in family.kinds:
        assert callable(exporter(family, kind)), kind.name


@pytest.mark.parametrize(
    ("old", "kind", "new"),
    [("sdn_absent", "vnet", "sdn_vnet_absent"), ("firewall_absent", "ipset", "firewall_ipset_absent")],
)
def test_the_old_absent_names_warn_and_run_the_kind_s_own_call(monkeypatch, old, kind, new):
    """``proxmox.sdn_absent kind=…`` and ``proxmox.firewall_absent kind=…`` (0.1) are kept until 0.3: each
    warns naming the call that replaces it and runs that one with the same arguments."""
    from salt.exceptions import CommandExecutionError

    module = load("_modules", "proxmox", {}, False)
    seen = []
    monkeypatch.setattr(module, new, lambda name, **names: seen.append((name, names)) or {"name": name})
    with pytest.warns(DeprecationWarning, match=f"proxmox.{new}"):
        assert getattr(module, old)(kind, "web", removal="destroy", test=True) == {"name": "web"}
    assert seen == [("web", {"removal": "destroy", "test": True})]
    with pytest.raises(CommandExecutionError, match="kind: expected"):
        getattr(module, old)("tape", "web")
