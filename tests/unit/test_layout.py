"""The library's imports run one way (docs/design.md §2 "Layout"): what every family shares never
imports a family, so adding a family, or reading the shared code, never drags another family in.

Every module of ``salt_proxmox`` is parsed with ``ast`` (no import runs) and each of its imports
counted, those under ``if TYPE_CHECKING:`` and inside functions included: a type-only import is still
a dependency a reader must follow, and a function-level one still loads the module at run time.

- ``pve/`` (the API client and PVE's rules), ``openbao/`` (the OpenBao client and credentials),
  ``run/`` (the per-run context, memo and Salt plumbing) and ``ownership/`` (the rows, their stores
  and their index) import nothing from ``guest/`` or a family;
- the shared lifecycles (``guest/`` besides the family-specific helpers listed in ``FAMILY_OWNED``,
  and ``simple/spec``, ``simple/fields``, ``simple/lifecycle``, ``simple/rename``) import no family;
- no two modules import each other;
- no test module imports another: what tests share lives in ``tests/support/`` (``test_*`` modules and
  the ``unit``, ``integration`` and ``functional`` directories are imported by nobody).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "salt_proxmox"

#: The packages of one family each (a ``registry`` entry's code), and the simple families' modules.
FAMILIES = ("lxc", "qemu", "network", "sdn", "firewall", "openbao_policy", "ha")
SIMPLE_FAMILIES = (
    "simple.pool",
    "simple.role",
    "simple.acl",
    "access.user",
    "access.group",
    "access.token",
    "access.realm",
)

#: The shared layers that import neither ``guest/`` nor a family.
BELOW_GUESTS = ("pve", "openbao", "run", "ownership", "wire", "errors", "outcome", "registry", "entry")

#: Modules of ``guest/`` allowed to import a family: none (a guest NIC reads this run's node and SDN
#: apply markers from ``run.memo`` and the staged diff through ``wire.ifdiff``).
FAMILY_OWNED: frozenset[str] = frozenset()

#: Two-file circles allowed: none (``guest/family.py`` ↔ ``guest/verdict.py`` and ``lxc/family.py`` ↔
#: ``lxc/judge.py`` were untangled when each family got its own words and ``guest/change.py``).
KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def imports_of(name: str, path: Path) -> set[str]:
    """The ``salt_proxmox`` modules ``name`` imports (relative to the package, ``pve.client``), at any
    depth of its syntax tree."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["salt_proxmox", *package[: len(package) - node.level + 1]]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from a import b`` imports module ``a.b`` when there is one, else a name of ``a``.
            for alias in node.names:
                whole = f"{module}.{alias.name}"
                found.add(whole if whole.removeprefix("salt_proxmox.") in MODULES else module)
    return {m.removeprefix("salt_proxmox.") for m in found if m.startswith("salt_proxmox.")}


GRAPH = {name: imports_of(name, path) - {name} for name, path in MODULES.items()}


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _is_family(module: str) -> bool:
    return _in(module, FAMILIES) or _in(module, SIMPLE_FAMILIES)


def test_the_graph_reads_every_module():
    """The parse sees the package: guard against a test that passes by reading nothing."""
    assert {"run.context", "run.memo", "pve.facts", "guest.lifecycle"} <= set(MODULES)
    assert "run.context" in GRAPH["pve.facts"], "a TYPE_CHECKING import counts"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _in(m, BELOW_GUESTS)))
def test_shared_layers_import_no_guest_and_no_family(module):
    wrong = sorted(m for m in GRAPH[module] if _in(m, ("guest",)) or _is_family(m))
    assert not wrong, f"{module} imports {wrong}: imports run one way, from families to what they share"


@pytest.mark.parametrize(
    "module",
    sorted(
        m
        for m in MODULES
        if (_in(m, ("guest",)) and m not in FAMILY_OWNED)
        or m in ("simple.spec", "simple.fields", "simple.lifecycle", "simple.rename")
    ),
)
def test_the_shared_lifecycles_import_no_family(module):
    wrong = sorted(m for m in GRAPH[module] if _is_family(m))
    assert not wrong, f"{module} imports {wrong}: the shared lifecycle takes a family, never imports one"


def test_no_two_modules_import_each_other():
    circles = {frozenset({a, b}) for a, targets in GRAPH.items() for b in targets if a in GRAPH.get(b, ())}
    unknown = sorted(sorted(pair) for pair in circles - KNOWN_CIRCLES)
    assert not unknown, f"modules importing each other: {unknown}"


def test_no_import_circle_in_the_package():
    """No circle of any length: ``graphlib`` finds one where a two-file check sees none (a -> b -> c -> a)."""
    try:
        graphlib.TopologicalSorter(GRAPH).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"an import circle: {' -> '.join(error.args[1])}")


def test_the_circle_check_sees_a_circle():
    """Guard: the check above fails on a circle of three."""
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter({"a": {"b"}, "b": {"c"}, "c": {"a"}}).prepare()


#: docs/design.md §2: a module of the package is one concern; past this many lines it is two.
MAX_LINES = 650


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_of_the_package_is_over_650_lines(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[module]} has {lines} lines: split it along a seam it already has"


#: Salt's side of the product, which stays thin (docs/design.md §2): the execution and state modules.
SALT_MODULES = sorted([*PACKAGE.parent.glob("_modules/*.py"), *PACKAGE.parent.glob("_states/*.py")])


@pytest.mark.parametrize("path", SALT_MODULES, ids=[f"{p.parent.name}/{p.name}" for p in SALT_MODULES])
def test_no_salt_module_is_over_650_lines(path):
    """A call that grows ``_modules/proxmox.py`` belongs in the library: the registry's generated calls
    (``run.calls``) or the operator calls (``salt_proxmox.adhoc``)."""
    assert len(SALT_MODULES) > 20, "the glob found the modules"
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path} has {lines} lines: move its logic into salt_proxmox"


TESTS = PACKAGE.parent / "tests"
#: Directories holding only test modules; what their tests share lives in tests/support/.
TEST_ONLY = ("tests.unit", "tests.integration", "tests.functional")


def _test_imports() -> dict[str, set[str]]:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        name = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)
        modules: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module)
                modules.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
        found[name] = {m for m in modules if m.startswith("tests.")}
    return found


def test_no_test_module_imports_another():
    """A test module imported by another runs its tests' module-level code twice and ties two suites'
    fixtures together; shared stubs and declarations live in tests/support/."""
    imports = _test_imports()
    assert "tests.support.guests" in imports["tests.integration.test_lxc"], "the parse sees the tests"
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in imports.items()
        for target in targets
        if target in imports and (target.rsplit(".", 1)[-1].startswith("test_") or _in(target, TEST_ONLY))
    )
    assert not wrong, f"test modules importing test modules: {wrong}"


def _script_graph() -> dict[str, set[str]]:
    """``bench/`` and ``tests/support/`` modules and which of each other they import."""
    root = PACKAGE.parent
    paths = [*sorted((root / "bench").glob("*.py")), *sorted((root / "tests" / "support").glob("*.py"))]
    names = {".".join(path.relative_to(root).with_suffix("").parts): path for path in paths}
    graph = {}
    for name, path in names.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.update(
                    m for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if m in names
                )
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in names)
        graph[name] = found - {name}
    return graph


def test_no_import_circle_in_the_benchmarks_and_test_support():
    """The benchmarks share one module (``bench/common.py``) rather than importing each other."""
    graph = _script_graph()
    assert "bench.common" in graph.get("bench.overlap", set()), "the parse sees bench/"
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"an import circle: {' -> '.join(error.args[1])}")


#: Names of guest families and of their property strings: a module-level table of ``wire/`` keyed by
#: them would be family schema, which belongs in the family's own ``schema.py`` (``wire/`` parses,
#: prints and compares with a table it is given).
FAMILY_WORDS = frozenset(
    {"lxc", "qemu", "net", "qemu-net", "volume", "drive", "features", "dev", "startup", "ipconfig", "agent"}
)


def _module_level_keys(path: Path) -> set[str]:
    """The string keys of every dict literal assigned at module level in ``path`` (at any depth of
    the assigned value), and of ``dict(...)`` calls' keyword names."""
    keys: set[str] = set()
    for statement in ast.parse(path.read_text(), str(path)).body:
        if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
            continue
        for node in ast.walk(statement.value):
            if isinstance(node, ast.Dict):
                keys.update(
                    k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
                )
            elif isinstance(node, ast.Call):
                keys.update(kw.arg for kw in node.keywords if kw.arg)
    return keys


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _in(m, ("wire",))))
def test_wire_holds_no_family_table(module):
    """``wire/`` takes each property string's table as an argument; no table of its own is keyed by a
    family or a format (``lxc``, ``qemu``, ``net``, ``volume``, …)."""
    wrong = sorted(_module_level_keys(MODULES[module]) & FAMILY_WORDS)
    assert not wrong, f"{module} holds a table keyed by {wrong}: family schema belongs in the family's schema"
