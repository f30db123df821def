"""What one entry of the registry (``salt_proxmox.registry.FAMILIES``) is: a ``Family`` with its
``Kind``s, the library ``Run`` each state call runs, and the ``Call`` the state skin and the execution
module read (docs/adding-a-family.md). Imports no family and no Salt: a family's code is named by
``"module:attribute"`` and imported when asked for (``imported``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: Where a target is configured unless a family says otherwise.
TARGETS = "proxmox:targets"


def imported(path: str) -> object:
    """The attribute ``path`` (``package.module:attribute``) names, imported. Raises ImportError or
    AttributeError for a path naming nothing."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class Run:
    """The library plan/apply a state call runs (an ``Outcome``, ``salt_proxmox.outcome``), by
    ``"module:function"``: called as ``function(ctx, spec, test, state_id, **arguments)`` where ``spec``
    is the kind's ``ObjectSpec`` (a guest family's: its guest ``Family``), or without ``spec`` when
    ``spec`` is False (a lifecycle of its own)."""

    function: str
    spec: bool = True


#: The guest lifecycle's state calls (``salt_proxmox.guest.states``), handed the guest ``Family``.
GUEST_PRESENT = Run("salt_proxmox.guest.states:present")
GUEST_ABSENT = Run("salt_proxmox.guest.states:absent")


#: The simple lifecycle (``salt_proxmox.simple.lifecycle``), what a kind with an ``ObjectSpec`` runs.
SIMPLE_PRESENT = Run("salt_proxmox.simple.lifecycle:present")
SIMPLE_ABSENT = Run("salt_proxmox.simple.lifecycle:absent")


@dataclass(frozen=True)
class Kind:
    """One kind of object a family declares.

    - ``name``: the ownership row family (``<target>/<name>/<identity>``, ``salt_proxmox.ownership``),
      e.g. ``sdn_vnet``; the execution-module functions are ``<name>_present``, ``<name>_absent`` and
      ``<name>_get``;
    - ``present``/``absent``: the state functions declaring it present and absent (``vnet``,
      ``vnet_absent``);
    - ``spec``: ``"module:attribute"`` of its ``ObjectSpec`` (``salt_proxmox.simple.spec``), else None
      (guests and policies have lifecycles of their own);
    - ``present_run``/``absent_run``: what its state calls run (``Run``); None for a call written by
      hand in the execution module (guests, policies);
    - ``get``: ``"module:function"`` of its ad-hoc read, ``(ctx, **identity) -> object``, for a kind
      without ``spec``; a kind with one is read by the simple lifecycle (``simple.lifecycle.read``);
    - ``secrets``: ``"module:attribute"`` of the keys its present state reads from pillar
      (``secrets_pillar``), never taken as state arguments (Salt caches those);
    - ``sources``: ``"module:function"`` given a present's ``(declared, fetch, render)`` before any
      context, ``declared`` holding its pillar ``secrets`` too, returning the declaration with the Salt
      file server's files it names read in (``fetch(url)``: the text or None, ``render(text, template,
      context)``: Salt's templating), or raising DeclarationError (a snippet's ``source: salt://...``);
      needs ``saltenv``;
    - ``precheck``: ``"module:function"`` given a present's ``(declared, target)`` before any context,
      returning a refusal sentence or None (a storage's ``target`` spelt as an iSCSI name);
    - ``linked``: ``{declared key: targets section}``: a key naming a target of another section (a
      ``pbs`` storage's ``pbs_target``), whose context the run is handed as ``linked={key: ctx}``;
    - ``state_id``/``saltenv``: its calls take the declaring state's id / its saltenv (``salt://``);
    - ``names``: the state arguments naming one object of a kind without ``spec``;
    - ``ahead``: ``"module:function"`` handed ``(ctx, spec, declarations)``, the run's present
      declarations of the kind, before its first state runs (``run.config.read_ahead``).
    """

    name: str
    present: str = "present"
    absent: str = "absent"
    spec: str | None = None
    #: ``"module:function"`` keying a chunk of a kind without ``spec`` (``(chunk, default_target) ->
    #: row keys``): a firewall rule list by its scope.
    keys: str | None = None
    #: ``"module:function"`` exporting a kind without ``spec`` (``(ctx, bao, keep) -> Found``,
    #: ``salt_proxmox.export``).
    export: str | None = None
    #: ``"module:function"`` of what a present declaration of a kind without ``spec`` needs of the
    #: credentials (``(state_id, target, name, args) -> list[Need]``, ``access.estate``); None: nothing
    #: the estate's privileges report can name.
    needs: str | None = None
    present_run: Run | None = SIMPLE_PRESENT
    absent_run: Run | None = SIMPLE_ABSENT
    get: str | None = None
    secrets: str | None = None
    sources: str | None = None
    precheck: str | None = None
    linked: Mapping[str, str] = field(default_factory=dict)
    state_id: bool = True
    saltenv: bool = False
    names: tuple[str, ...] = ("name",)
    ahead: str | None = None

    def row_keys(self, chunk: object, default_target: str | None) -> frozenset[str]:
        """The ownership row keys ``chunk`` declares, by ``keys``. Raises LookupError without it."""
        if self.keys is None:
            raise LookupError(f"{self.name}: no keys function")
        return imported(self.keys)(chunk, default_target)

    def load(self) -> object:
        """Its ``ObjectSpec``, imported. Raises LookupError for a kind without one."""
        if self.spec is None:
            raise LookupError(f"{self.name}: no ObjectSpec (its family runs a lifecycle of its own)")
        return imported(self.spec)

    def identity(self) -> tuple[str, ...]:
        """The state arguments naming one object of this kind (``ObjectSpec.identity_keys``; ``names``
        for a kind without spec). Imports the spec."""
        return tuple(self.load().identity_keys) if self.spec else self.names


@dataclass(frozen=True)
class Call:
    """The execution-module function a state function runs, and what the skin hands it besides the
    state's own arguments (Salt's ``test``, the run's ``__low__``/``__lowstate__``/``__instance_id__``):

    - ``function``: ``proxmox.pool_present``;
    - ``verb``: ``present``, ``absent`` or ``applied``; ``kind``: the kind it declares (None for an
      apply step);
    - ``run``: the library plan/apply a generated function runs; None: written by hand;
    - ``state_id``: it takes the declaring state's id (``__low__['__id__']``) as ``state_id``;
    - ``saltenv``: it takes the state's saltenv (``__env__``) as ``saltenv`` (``salt://`` fragments).
    """

    function: str
    verb: str
    kind: Kind | None
    run: Run | None
    state_id: bool = True
    saltenv: bool = False


@dataclass(frozen=True)
class Family:
    """One family: one state module, one pillar section of the formula.

    - ``name``: how the plan names it (the outputter's summary lines, ``_output/proxmox_plan.py``
      ``family``);
    - ``state``: its Salt state module (``_states/<state>.py``); ``module``: the execution module
      serving it;
    - ``kinds``: the kinds of object it declares (one, or several for ``proxmox_sdn``);
    - ``section``: the formula's pillar path (``proxmox:pools``); ``prefix``: its state ids' prefix;
    - ``applied``: its apply step (state function ``applied``: a node's network reload, the SDN
      commit), None when it has none;
    - ``targets``: the section its targets are configured in (``proxmox:pbs_targets`` for PBS);
    - ``guest``: ``"module:attribute"`` of its guest ``Family`` (``salt_proxmox.guest.family``), for
      a guest family; ``adhoc``: ``"module:attribute"`` of its ad-hoc calls (``<name>_config``,
      ``_create``, ...: ``{verb: (arguments, docstring)}``, ``salt_proxmox.lxc.calls``);
    - ``calls``: ``{state function: Call}``, derived from the kinds and ``applied``.
    """

    name: str
    state: str
    module: str
    kinds: tuple[Kind, ...]
    section: str
    prefix: str
    applied: Run | None = None
    targets: str = TARGETS
    guest: str | None = None
    adhoc: str | None = None
    calls: Mapping[str, Call] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        calls: dict[str, Call] = {}
        for kind in self.kinds:
            calls[kind.present] = Call(
                f"{self.module}.{kind.name}_present",
                "present",
                kind,
                kind.present_run,
                kind.state_id,
                kind.saltenv,
            )
            calls[kind.absent] = Call(
                f"{self.module}.{kind.name}_absent", "absent", kind, kind.absent_run, kind.state_id
            )
        if self.applied is not None:
            calls["applied"] = Call(f"{self.module}.{self.name}_applied", "applied", None, self.applied)
        object.__setattr__(self, "calls", MappingProxyType(calls))

    def kind_of(self, fun: str) -> Kind | None:
        """The kind of object state function ``fun`` declares, or None (an apply declares none)."""
        return next((kind for kind in self.kinds if fun in (kind.present, kind.absent)), None)
