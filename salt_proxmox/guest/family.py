"""What one guest family (containers, VMs) tells the shared guest lifecycle (``guest.lifecycle``).

The lifecycle (read with proven absence, identity and ownership, create, digest-guarded update,
resize, pending changes, read-back, retain/destroy) is the same for every guest PVE runs: both
families live under ``/nodes/{node}/{lxc|qemu}/{vmid}`` with the same ``pending``, ``config``,
``resize`` and ``status/*`` calls (pve-container ``src/PVE/API2/LXC.pm``, qemu-server
``PVE/API2/Qemu.pm``). A ``Family`` is the data that differs:

- words: ``words`` (``guest.words.Words``, defined once in the family's ``schema``: ``kind``,
  ``state``, ``noun``, ``label``, ``command``, ``ha_type``, read here as the family's own attributes),
  ``destroy_running`` (PVE's refusal to destroy a running guest, formatted with ``vmid``),
  ``ha_forces_stop`` (the HA manager's stop with a timeout ends in a hard stop: pve-ha-manager
  ``Resources/PVEVM.pm`` ``shutdown`` sends ``forceStop=1``, ``Resources/PVECT.pm`` does not),
  ``startup_down`` (a shutdown without a timeout waits the guest's ``startup: down=``: qemu-server
  ``_do_vm_stop``; pve-container's ``vm_shutdown`` waits 60 s), ``pauses`` (a running guest may be
  paused, ``status/current``'s ``qmpstatus``, and PVE then refuses to shut it down: qemu-server
  ``vm_shutdown``);
- the declaration: ``parse`` (the family's ``parse_declaration``, keyword arguments ``vmid``,
  ``node``, ``target``, ``adopt``, ``removal``, ``config``, ``reboot_for_pending``; raises
  DeclarationError), giving a ``Declaration``;
- the judge: ``judge(decl, live, style, ours) -> Change`` (``ours``: the declaration the state's
  ownership row recorded, or None; a VM's ``cipassword_serial`` is compared with it); ``shown(key,
  value)`` (how a return shows a value); ``key_change(key, old, new)`` (one key of a return's
  ``changes``); ``operator_view(live)`` (the config an operator reads back);
  ``identity_refusals(decl, recorded)`` (what makes a declaration another guest than the one its
  state recorded); ``update_checks(ctx, decl, change, config) -> (refusals, notes)`` (what a write
  of ``change`` to an existing guest whose config is ``config`` meets that needs the cluster's facts:
  its release, the volumes it names, the provision token's privileges);
- hotplug: ``applies_live(key, clear, config, new)``: whether writing ``key`` (the value ``new``;
  None for a ``delete``) to a RUNNING guest with ``config`` (a ``GuestConfig``; a VM's ``hotplug``
  option is in it) takes effect at once;
- identity: ``keys`` (``guest.fingerprint.GuestKeys``: NICs, volumes, generated values);
- writes: ``update`` and ``resize`` (``pve.constraints.Endpoint``s the PUT forms are checked
  against), ``size_of(value)`` (the ``size`` of a volume value, for a return's ``disks``);
  ``config_task(put, clear, config, running)`` (None: every config write is the synchronous
  ``PUT …/config``): why a write of ``put`` (key -> value) and ``clear`` to a guest with ``config``
  (``running``: its power state, None when not read) goes as the asynchronous ``POST …/config``
  task, or None for the ``PUT`` (qemu-server documents the ``PUT`` for simple changes and the
  ``POST`` for hot-plug and storage allocation; pve-container has the ``PUT`` only);
  ``pending_first`` (a failed config write may have written: qemu-server ``update_vm_api`` writes
  each value into the pending section before it hot-plugs or applies it, and raises their errors
  after; pve-container ``update_vm`` raises its errors before it writes the config), so the
  lifecycle reads the config back after such a failure and says what is in effect, pending and not
  written; ``names_guest`` (the state's ``name`` is the guest's own PVE ``name`` key, a VM's
  ``qm set --name``, unless the declaration says ``name_from_id``; a container's is its hostname);
- create: ``plan_create(ctx, decl) -> CreatePlan`` (refusals and what the plan says), and
  ``create(ctx, decl, credential)``: a generator of ``CreateStep``s, each a request that starts a
  task (``POST …/lxc``; a VM clone is ``POST …/qemu/{template}/clone`` then a config write). The
  lifecycle runs each step with the one provision credential ``credential()`` mints, awaits its
  task with it, and only then asks the generator for the next step, so a later step may read what
  an earlier one made. Code before the first ``yield`` may refuse (raise) with nothing recorded;
- root keys at create: ``create_root(decl)``: key -> refusal sentence for the declared keys only
  root@pam may set that the create writes through the root lane after the token's create
  (``guest.lane.create_write``; the family's ``create_form`` leaves them out), refused with that
  sentence when the target has no lane;
- secrets: ``secrets_rule``, the plan's and the apply's sentence on what becomes of the
  declaration's secrets (a container's ``password`` goes with the create only; a VM's
  ``cipassword`` is also written again when it is unset or its serial changes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from salt_proxmox.guest.change import Change
from salt_proxmox.guest.fingerprint import GuestKeys
from salt_proxmox.guest.pending import GuestConfig
from salt_proxmox.guest.words import Words
from salt_proxmox.pve.constraints import Endpoint
from salt_proxmox.pve.facts import TagStyle

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext


class Declaration(Protocol):
    """What the shared lifecycle reads of a family's declaration (``lxc.props.LxcDeclaration``)."""

    state_id: str
    target: str
    node: str
    vmid: int
    adopt: bool
    removal: str
    config: dict[str, str]
    reboot_for_pending: bool
    pool: str | None
    secrets: dict[str, str]

    def stored(self) -> dict[str, object]:
        """The declaration as grains keep it."""
        ...


@dataclass(frozen=True)
class CreatePlan:
    """What a plan says about creating a guest: ``refusals`` (non-empty: no create); ``source``
    (``from local:vztmpl/…``, ``by cloning VM 9000``) and ``again`` (the same, for a guest of ours
    that is gone: ``from ostemplate with new, empty volumes``); ``suffix`` ends the create note;
    ``notes`` are further plan lines. ``changes``: what the create writes, as a return's ``changes``
    (a VM clone: the keys its configure step writes or deletes on the clone as it will be); None
    shows the create form's keys (``create_form``)."""

    refusals: list[str] = field(default_factory=list)
    source: str = ""
    again: str = ""
    suffix: str = ""
    notes: list[str] = field(default_factory=list)
    changes: Mapping[str, object] | None = None


@dataclass(frozen=True)
class CreateStep:
    """One request of a create that starts a task: ``method`` and ``path`` (``POST``,
    ``nodes/pve1/lxc``), ``what`` (the task's name in messages) and its ``form``. ``task`` False:
    a synchronous request that starts none (a container's ``PUT …/config`` after a restore).
    ``uncertain``: why a failure of this step leaves the guest neither absent nor ours (a VM
    restore's config may stay at the vmid), so its ownership row stays ``creating``."""

    method: str
    path: str
    what: str
    form: Mapping[str, str] = field(default_factory=dict)
    task: bool = True
    uncertain: str = ""


#: ``Family.config_task``: ``(put, clear, config, running) -> why the write is a task, or None``.
ConfigTask = Callable[[Mapping[str, str], Sequence[str], GuestConfig, bool | None], str | None]


@dataclass(frozen=True)
class Family:
    """One guest family; see the module docstring for each field."""

    words: Words
    destroy_running: str
    parse: Callable[..., Declaration]
    judge: Callable[[Declaration, Mapping[str, object], TagStyle, Declaration | None], Change]
    shown: Callable[[str, str | None], object]
    key_change: Callable[[str, str | None, str | None], dict]
    operator_view: Callable[[Mapping[str, object]], dict[str, str]]
    identity_refusals: Callable[[Declaration, Mapping[str, object] | None], list[str]]
    update_checks: Callable[[PveContext, Declaration, Change, GuestConfig], tuple[list[str], list[str]]]
    applies_live: Callable[[str, bool, GuestConfig, str | None], bool]
    keys: GuestKeys
    update: Endpoint
    resize: Endpoint
    size_of: Callable[[str | None], str | None]
    plan_create: Callable[[PveContext, Declaration], CreatePlan]
    create: Callable[[PveContext, Declaration, Callable[[], Credential]], Iterator[CreateStep]]
    create_form: Callable[[Declaration], dict[str, str]]
    secrets_rule: str = "sent with the create only; never shown, kept or compared"
    ha_forces_stop: bool = False
    startup_down: bool = False
    pauses: bool = False
    config_task: Callable[[Mapping[str, str], Sequence[str], GuestConfig, bool | None], str | None] | None = (
        None
    )
    pending_first: bool = False
    names_guest: bool = False
    create_root: Callable[[Declaration], Mapping[str, str]] = lambda decl: {}
    #: Root keys no API call writes, kept in the guest's config file on its node (a container's raw
    #: ``lxc`` lines), and their writer: ``file_write(ctx, decl, {key: text}, digest)`` through the
    #: root lane's node (``guest.lane.send_root_keys``).
    file_keys: frozenset[str] = frozenset()
    file_write: Callable[[PveContext, Declaration, Mapping[str, str], str], None] | None = None

    @property
    def kind(self) -> str:
        """``Words.kind``: ``lxc``/``qemu``."""
        return self.words.kind

    @property
    def state(self) -> str:
        """``Words.state``: ``proxmox_lxc``/``proxmox_qemu``."""
        return self.words.state

    @property
    def noun(self) -> str:
        """``Words.noun``: ``container``/``VM``."""
        return self.words.noun

    @property
    def label(self) -> str:
        """``Words.label``: ``CT``/``VM``."""
        return self.words.label

    @property
    def command(self) -> str:
        """``Words.command``: ``pct``/``qm``."""
        return self.words.command

    @property
    def ha_type(self) -> str:
        """``Words.ha_type``: ``ct``/``vm``."""
        return self.words.ha_type

    def what(self, vmid: int, node: str) -> str:
        """``CT 100 on pve1``: how messages name one guest (``Words.what``)."""
        return self.words.what(vmid, node)
