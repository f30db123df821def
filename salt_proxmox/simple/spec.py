"""The description of a simple PVE object family (docs/design.md §7), shared by every such family.

A simple object is one PVE keeps as a small record behind one read: a resource pool, a custom
role, an ACL entry, a cluster firewall alias. Each family is described once, as an
``ObjectSpec``:

- ``read``: the GET that reads one object, and ``parse``, which turns PVE's answer into the
  family's canonical attributes or raises ``ValueError`` for an answer without the promised
  shape (a malformed read is an error, never absence);
- ``absence`` / ``is_absent``: PVE's exact answer that says the object does not exist. Nothing
  else is absence: not a 403, not another 500, not an empty 200. A family whose read is a
  listing (ACL entries) says so with ``confirm_absent``, which proves the listing complete;
- ``create`` and ``update``: the calls and their forms, checked against ``create_endpoint`` /
  ``update_endpoint`` (the vendor constraints of ``salt_proxmox.pve.constraints``) before any
  write; ``update`` is None for a family PVE cannot change in place;
- ``delete``: the call that removes one;
- ``matches``: whether a live object already is as declared (canonical attributes compared);
- ``identity_keys``: the state arguments ``identify`` takes, so one run's chunks can be keyed
  without the family's other keys;
- ``listing`` / ``listed``: the GET that lists every object of the family, and how to pick this
  object's canonical attributes out of it (None: not listed there, so the object's own read
  decides, and only that read can prove it absent). A run reads the listing once and its states
  share it until the run writes (``salt_proxmox.pve.readahead``); a listing that fails, or
  whose row for the object has not the promised shape, is the error of the state that read it;
- ``write_guard``: extra form keys a write carries to say which read it was judged against
  (a digest), read right before the write. Pools, roles and ACL entries live in ``user.cfg``,
  whose API methods take no digest (PVE 9 API schema); for them the read-back after the write is
  what catches a change made meanwhile. An update carries it; a delete only with
  ``delete_guard``, since many DELETE schemas take no digest and PVE refuses a key its schema lacks
  (``additionalProperties => 0``: HTTP 400 ``digest: property is not defined in schema``). pve-firewall
  ``API2/Firewall/Aliases.pm`` ``remove_alias`` takes one; pve-network's SDN ``delete`` methods
  (``API2/Network/SDN/Zones.pm``, ``Vnets.pm``, ``Subnets.pm``) take none.
- ``moving``: the keys PVE (or a daemon under it) changes by itself, given the live attributes and
  the declaration: never drift, never written after the create (a Ceph pool's ``pg_num`` while its
  ``pg_autoscale_mode`` is ``on``: the pg_autoscaler moves it);
- ``task_node``: for a family whose writes PVE runs as a task (it forks a worker and answers its
  UPID: pve-manager ``PVE/API2/Ceph/Pool.pm`` ``createpool``/``setpool``/``destroypool``), the node
  the task runs on; each write (each of ``task_writes``) is then ``PveContext.task``, awaited with
  the credential that started it, and a task ending in error is the write's error;
- ``for_cluster``: the family as this cluster takes it, for a family whose calls differ by PVE
  release (pools on PVE 8.0): given the context and the declaration, the ``ObjectSpec`` whose
  ``read``, ``parse``, ``update`` and ``delete`` the lifecycle then uses (``ObjectSpec.on``). It may
  read what the run learns once (``salt_proxmox.pve.facts``); it is asked only when one of those
  calls is about to be made, so a judgement from the shared listing reads nothing more.
- ``create_on_cluster``: the create too is the one ``for_cluster`` gives (a guest's firewall objects:
  their path names the guest's node, read from the guest index);
- ``unborn``: for a family whose objects live under an object an earlier state of the same plan creates
  (a guest's firewall objects, under a guest the run creates before them): the plan's note when the
  object is such a one, else None. It is then absent without a read (there is nothing to read yet: PVE
  would answer that the guest's config does not exist), and its create is the one ``for_cluster`` gives
  on the path the declaration of the parent names;
- ``copied``: for a family whose objects live under an object an earlier state of the same plan makes as
  a copy of another (a guest the run clones: PVE copies the template's firewall to it, qemu-server
  ``clone_vm``: ``clone_vmfw_conf``): the plan's note when the object is such a one, else None. Its
  reads then go where ``for_cluster`` points them, the source of the copy, so the plan judges what the
  copy will hold, as the apply judges it after the copy; every plan of it says the note;
- ``create_guard``: the create carries ``write_guard`` too (firewall options: settings PVE always
  has, whose ``PUT`` takes the digest of them all, pve-firewall ``API2/Firewall/Cluster.pm``
  ``set_options``); ``write_guard`` is then handed ``{}`` as the live attributes;
- ``side_effects``: what PVE does by itself when it takes a create, update or delete (an SDN subnet
  registered in its zone's IPAM at write time; a storage's data left in place by its delete), as plan
  lines; the plan and the apply both say them.
- ``recorded``: values compared with the ownership row rather than PVE (a storage's ``secret_serial``).
- ``send``: for a family whose write is more than its one call, the function that sends it (given the
  context, the declaration, the call and what it does): an API token's create, whose answer holds the
  secret PVE shows once, which it stores in OpenBao before anything else happens to it.
- ``resolve``: for a family whose declaration may leave out a key the cluster already knows (a
  snapshot's ``type``: its guest's family, read from the guest index), given the context and the
  state's arguments, ``(the arguments completed, plan notes saying what was read)``, before ``declare``
  (and, for a ``removal: destroy`` without an ownership row, before ``identify``); it raises
  DeclarationError naming the key, and a failing read's error (never taken for absence);
- ``refusals``: PVE's deterministic refusals of the write, predicted at plan from what the
  ``read`` credential can see (a pool that still has members, an ACL entry naming a role that
  does not exist, a privilege this PVE release does not know): sentences naming what and what to
  do, so the apply never meets them. Objects a create earlier in the same run will make count as
  existing (``will_exist``), so a plan of a role and the ACL entry naming it is not refused.

``Declared`` is one checked declaration, built by the family's ``declare`` (full declaration)
or ``identify`` (identity keys only, for ``absent``). Both raise ``DeclarationError`` naming
the key and the rule, before any network call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from salt_proxmox.errors import DeclarationError, Refused, boolean_problem
from salt_proxmox.pve.constraints import Endpoint
from salt_proxmox.pve.errors import PveError
from salt_proxmox.pve.listing import rows_of
from salt_proxmox.pve.permissions import held_privileges

if TYPE_CHECKING:  # pragma: no cover
    from salt_proxmox.pve.client import Credential
    from salt_proxmox.run.context import PveContext


@dataclass(frozen=True)
class Call:
    """One API call: ``method``, ``path`` (relative to ``/api2/json/``, labels encoded), query
    ``params`` and ``form`` body (both ``{name: wire string}``).

    PVE's HTTP server (pve-http-server 6.0.5 ``APIServer/AnyEvent.pm`` ``extract_params``) reads
    a body only for POST and PUT, so extra keys of a GET or DELETE go to the query string. ``json``
    sends the form as a JSON object, the only way to give a key an empty value (see
    ``PveClient.request``).
    """

    method: str
    path: str
    params: Mapping[str, str] | None = None
    form: Mapping[str, str] | None = None
    json: bool = False

    def payload(self) -> dict[str, str]:
        """The parameters PVE will see (query and body together)."""
        return {**(self.params or {}), **(self.form or {})}

    def with_extra(self, extra: Mapping[str, str]) -> Call:
        """This call with ``extra`` keys (e.g. a ``digest``) in the body or the query string."""
        if not extra:
            return self
        if self.method in ("POST", "PUT"):
            return Call(self.method, self.path, self.params, {**(self.form or {}), **extra}, self.json)
        return Call(self.method, self.path, {**(self.params or {}), **extra}, self.form, self.json)

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class Declared:
    """One checked declaration of a simple object.

    - ``state_id``: the declaring Salt state's id (docs/design.md §8);
    - ``target``: the ``proxmox:targets`` name;
    - ``identity``: the object's key as PVE keys it (a lower-cased alias name, a poolid, ...);
      ownership rows are ``<target>/<family>/<identity>``;
    - ``label``: how a sentence names it (``pool prod``);
    - ``names``: the identity keys as declared (used in paths and create forms);
    - ``values``: the compared attributes in the family's canonical spelling (JSON scalars, so
      they can be stored in grains and compared with what PVE answers); empty for ``identify``;
    - ``adopt``: take over a live object this minion did not create;
    - ``secrets``: values sent on a write and never read back, shown, stored or compared (a storage's
      ``password``): not in ``values``, not in ``stored()``, not in ``repr``.
    """

    state_id: str
    target: str
    identity: str
    label: str
    names: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, object] = field(default_factory=dict)
    adopt: bool = False
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    #: Values compared but never kept in the ownership row: notes a human wrote (a snapshot's
    #: ``description``), as a guest's description is never stored (``lxc.schema.NEVER_STORED``).
    unstored: frozenset[str] = frozenset()

    def stored(self) -> dict[str, object]:
        """The declaration as the ownership row keeps it: names and canonical values (``unstored``
        ones left out)."""
        return {**dict(self.names), **{k: v for k, v in self.values.items() if k not in self.unstored}}

    def declaring(self, values: Mapping[str, object], adopt: object) -> Declared:
        """This identity (an ``identify`` result) with its checked canonical ``values`` and
        ``adopt``: the full declaration. Raises DeclarationError when ``adopt`` is not a bool."""
        problem = boolean_problem("adopt", adopt)
        if problem:
            raise DeclarationError(problem)
        return replace(self, values=dict(values), adopt=bool(adopt))


def identify_by_name(
    state_id: str,
    target: str,
    name: object,
    extra: Mapping[str, object],
    *,
    noun: str,
    has: str,
    check: Callable[[str], str | None],
) -> Declared:
    """A ``Declared`` identity for a family keyed by one case-sensitive name (a poolid, a roleid).

    ``noun`` names the family (``pool``); ``has`` lists its keys for the unknown-key sentence;
    ``check`` returns None for a name PVE takes, else PVE's reason (naming the value). Raises
    DeclarationError for an unknown key, a name that is not non-empty text, or one ``check``
    refuses.
    """
    if extra:
        raise DeclarationError(f"unknown key(s) {', '.join(sorted(extra))}: a {noun} has {has}")
    if not isinstance(name, str) or not name:
        raise DeclarationError(f"name: the {noun}id is required (text)")
    problem = check(name)
    if problem:
        raise DeclarationError(f"name: {problem}")
    return Declared(state_id, target, identity=name, label=f"{noun} {name}", names={"name": name})


def comment_problem(comment: str) -> str | None:
    """None for a comment PVE keeps as written, else the reason.

    A pool (pve-manager 9.2.11 ``PVE/API2/Pool.pm`` ``create_pool``/``update_pool``) and a firewall
    alias (pve-firewall 6.0.4 ``src/PVE/API2/Firewall/Aliases.pm``, ``src/PVE/Firewall.pm``
    ``parse_alias``) keep a comment only when it is true in Perl, so ``0`` would be lost. ``comment``
    is the text as PVE reads it back (an alias comment already trimmed).
    """
    if comment == "0":
        return "PVE keeps a comment only when it is true in Perl, so a comment of 0 would be lost"
    return None


@dataclass(frozen=True)
class ObjectSpec:
    """One simple object family. See the module docstring for each member's contract.

    Callables take a ``Declared`` (and the live attributes where named ``live``); ``parse``
    takes PVE's ``data`` and returns the canonical attributes, None (a listing without the
    object; only with ``confirm_absent``), or raises ValueError(why). ``refusals`` takes the
    context, the declaration, the action (``create``, ``update`` or ``delete``) and the live
    attributes (None for a create).
    """

    family: str
    noun: str
    declare: Callable[..., Declared]
    identify: Callable[..., Declared]
    read: Callable[[Declared], Call]
    absence: str
    is_absent: Callable[[PveError, Declared], bool]
    parse: Callable[[object, Declared], dict | None]
    create: Callable[[Declared], Call]
    create_endpoint: Endpoint
    update: Callable[[Declared, Mapping[str, object]], Call | None] | None
    update_endpoint: Endpoint | None
    delete: Callable[[Declared, Mapping[str, object]], Call]
    matches: Callable[[Mapping[str, object], Declared], bool] | None = None
    confirm_absent: Callable[[PveContext, Credential, Declared], None] | None = None
    write_guard: Callable[[PveContext, Credential, Declared, Mapping[str, object]], dict] | None = None
    #: Whether the DELETE carries ``write_guard`` too (only where PVE's DELETE schema has ``digest``).
    delete_guard: bool = False
    listing: Call | None = None
    listed: Callable[[object, Declared], dict | None] | None = None
    #: The state arguments ``identify`` takes (``name`` is the state's name).
    identity_keys: tuple[str, ...] = ("name",)
    refusals: Callable[[PveContext, Declared, str, Mapping[str, object] | None], list[str]] | None = None
    side_effects: Callable[[PveContext, Declared, str], list[str]] | None = None
    for_cluster: Callable[[PveContext, Declared], ObjectSpec] | None = None
    resolve: Callable[[PveContext, Mapping[str, object]], tuple[dict, list[str]]] | None = None
    #: Values compared with the ownership row's recorded declaration, not with PVE, which cannot show
    #: them (a storage's ``secret_serial``: its secrets are never read back). A live object without a
    #: row has none, so a declared one differs from it.
    recorded: tuple[str, ...] = ()
    moving: Callable[[Mapping[str, object], Declared], frozenset[str]] | None = None
    task_node: Callable[[Declared], str] | None = None
    #: ``proxmox.export`` (``salt_proxmox.export``): how one row of the family's listing names its
    #: object, as ``identify`` takes it (``export_by("poolid")``: ``{"name": row["poolid"]}``), or None
    #: for a row not to export (a role PVE ships). The rest is the lifecycle's: the object is read as a
    #: plan reads it, and its canonical attributes are the declaration. Left None, the family has no
    #: export, and ``tests/unit/test_registry.py`` fails naming it.
    export_names: Callable[[Mapping[str, object]], Mapping[str, object] | None] | None = None
    #: The listings to export from when ``listing`` is not it (one per node): given the context,
    #: ``[(call, names every row of it adds)]``.
    export_listings: Callable[[PveContext], list[tuple[Call, Mapping[str, object]]]] | None = None
    #: The declared keys of a live object from its canonical attributes, where they differ (keys PVE
    #: shows but a declaration does not take): default, the canonical attributes as they are.
    export_values: Callable[[Mapping[str, object], Declared], Mapping[str, object]] | None = None
    #: The secrets a live object of this kind may hold, which PVE never shows (a storage's
    #: ``password``): never exported; the export's note names each and where its value goes.
    export_secrets: Callable[[Mapping[str, object]], Iterable[str]] | None = None
    #: How an export reads one object when not as a plan does (a scope's firewall options: every key
    #: it sets, where a plan reads only the declared ones): ``(ctx, probe) -> canonical attributes``.
    export_read: Callable[[PveContext, Declared], Mapping[str, object] | None] | None = None
    #: Why this kind is never exported (an API token: its secret cannot be read back), said in the
    #: export's notes in place of its objects.
    not_exported: str | None = None
    #: Keys ``parse`` returns that are PVE's own and never declared (an SDN subnet's section ``id``,
    #: which its update and delete paths name): an export leaves them out.
    live_only: tuple[str, ...] = ()
    create_on_cluster: bool = False
    create_guard: bool = False
    unborn: Callable[[PveContext, Declared], str | None] | None = None
    #: The credential that reads the family: ``read``, or ``provision`` where PVE shows an object only
    #: to a caller that may change it (ACME plugins: pve-manager ``API2/ACMEPlugin.pm`` asks Sys.Modify
    #: on ``/`` of every method), so the read token never holds a write privilege (``credential``); or
    #: ``root_lane`` where only root@pam may read one (ACME accounts: ``API2/ACMEAccount.pm``
    #: ``get_account`` has no ``permissions``): the object's read goes through ``ctx.lane`` (``reader``),
    #: its listings and checks with the read token.
    reads_with: str = "read"
    #: Who writes the family: ``provision`` (the token), or ``root_lane`` where only root@pam may (ACME
    #: accounts): every write goes through ``ctx.lane`` as root@pam, and a task it starts is awaited
    #: through the lane by that same owner (``simple.lifecycle``).
    writes_with: str = "provision"
    copied: Callable[[PveContext, Declared], str | None] | None = None
    #: Which writes ``task_node`` runs as tasks (a PBS datastore's create and delete are, its update
    #: is not: proxmox-backup ``src/api2/config/datastore.rs``).
    task_writes: tuple[str, ...] = ("create", "update", "delete")
    send: Callable[[PveContext, Declared, Call, str], None] | None = None
    #: The write methods that are tasks when ``task_node`` is set (a snapshot's create and delete are;
    #: its description's ``PUT …/config`` is not).
    task_methods: tuple[str, ...] = ("POST", "PUT", "DELETE")

    def credential(self, ctx: PveContext):
        """The credential this family reads its listings with (``reads_with``: the read token for a
        ``root_lane`` family, whose object reads go through the lane). Raises CredentialError."""
        return ctx.broker.provision() if self.reads_with == "provision" else ctx.broker.read()

    def reader(self, ctx: PveContext) -> tuple[object, Credential | None]:
        """``(transport, credential)`` one object of the family is read with: the root lane and no
        credential for a ``root_lane`` family (pvesh runs as root@pam and takes none), else
        ``ctx.client`` and ``credential``. Raises CredentialError, and Refused for a ``root_lane``
        family on a target without a lane (the family's ``for_cluster`` reads otherwise there)."""
        if self.reads_with != "root_lane":
            return ctx.client, self.credential(ctx)
        if ctx.lane is None:
            raise Refused(
                f"{self.noun}: only root@pam may read one, and target {ctx.target.name} has no root lane"
            )
        return ctx.lane, None

    def on(self, ctx: PveContext, decl: Declared) -> ObjectSpec:
        """This family as ``ctx``'s cluster takes it for ``decl`` (``for_cluster``; itself when
        the family's calls are the same on every release). Raises what ``for_cluster`` raises:
        Refused for an object this release cannot hold, PveError, PveMalformed, PveUnreachable."""
        return self.for_cluster(ctx, decl) if self.for_cluster is not None else self

    def differences(self, live: Mapping[str, object], decl: Declared) -> dict[str, dict]:
        """``{key: {old, new}}`` for each declared value the live object does not have, keys PVE
        moves by itself (``moving``) left out."""
        moved = self.moving(live, decl) if self.moving is not None else frozenset()
        return {
            key: {"old": live.get(key), "new": want}
            for key, want in decl.values.items()
            if key not in moved and live.get(key) != want
        }

    def is_match(self, live: Mapping[str, object], decl: Declared) -> bool:
        """True when the live object is as declared (``matches``, or every value equal)."""
        if self.matches is not None:
            return self.matches(live, decl)
        return not self.differences(live, decl)


def export_by(key: str) -> Callable[[Mapping[str, object]], Mapping[str, object] | None]:
    """An ``export_names`` for a family keyed by one name a listing row holds under ``key``
    (``poolid``, ``roleid``, ``storage``): ``{"name": row[key]}``, None for a row without it."""

    def names(row: Mapping[str, object]) -> Mapping[str, object] | None:
        value = row.get(key)
        return {"name": value} if isinstance(value, str) and value else None

    return names


def listed_row(rows: object, key: str, wanted: Callable[[object], bool]) -> Mapping | None:
    """The row of a listing (a list of objects) whose ``key`` is ``wanted``, or None. Raises
    ValueError when ``rows`` is not a list of objects."""
    return next((row for row in rows_of(rows) if wanted(row.get(key))), None)


def same_values(live: Mapping[str, object], decl: Declared) -> bool:
    """The usual ``matches``: every declared canonical value equals the live one."""
    return all(live.get(key) == want for key, want in decl.values.items())


def exact_message(status: int, wording: str) -> Callable[[PveError, Declared], bool]:
    """An ``is_absent`` for a die-style answer: HTTP ``status`` with exactly ``wording``, whose
    ``{name}`` placeholders are filled from the declaration's names (PVE strips nothing but the
    trailing newline, which ``PveError`` already dropped)."""

    def is_absent(error: PveError, decl: Declared) -> bool:
        return error.status == status and error.message == wording.format(**decl.names)

    return is_absent


def fingerprint(data: Mapping[str, object], skip: tuple[str, ...] = ()) -> str:
    """A digest of an object as one read shows it, ``skip`` keys left out (a backup job's ``next-run``,
    which moves with the clock): what ``reread_guard`` compares where PVE shows no digest."""
    kept = {key: value for key, value in data.items() if key not in skip}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def reread_guard(
    path_of: Callable[[Declared], str], why: str, skip: tuple[str, ...] = (), lane: bool = False
) -> Callable[[PveContext, Credential, Declared, Mapping[str, object]], dict]:
    """A ``write_guard`` for a family whose reads show no digest (a backup job: ``/cluster/backup``
    keeps none; a metric server: ``status.cfg``'s digest is in no answer): right before a PUT or
    DELETE the object is read again (``GET path_of(decl)``) and its ``fingerprint`` compared with the
    live attributes' ``fingerprint`` the decision was made on. ``why`` says, in the refusal, why the
    object was read again; ``lane``: it is read through the root lane as root@pam (a ``root_lane``
    family). The guard returns ``{}`` (nothing to send), and raises Refused when the object changed,
    and what the read raises."""

    def guard(ctx: PveContext, credential: Credential, decl: Declared, live: Mapping[str, object]) -> dict:
        transport = ctx.lane if lane else ctx.client
        if transport is None:
            raise Refused(f"{decl.label}: only root@pam may read it, and this target has no root lane")
        data = transport.request("GET", path_of(decl), None if lane else credential)
        if not isinstance(data, Mapping) or fingerprint(data, skip) != live.get("fingerprint"):
            raise Refused(
                f"{decl.label} changed after it was read for this decision ({why}, so it was read again "
                "right before the write and differs). Nothing was written: run again to decide on it as "
                "it is now."
            )
        return {}

    return guard


def _expected(ctx: PveContext) -> set[str]:
    return ctx.memo.setdefault(f"salt_proxmox.planned/{ctx.target.name}", set())


def expect(ctx: PveContext, family: str, identity: str) -> None:
    """Record that this run creates (or, under ``test``, would create) ``family`` ``identity``."""
    _expected(ctx).add(f"{family}/{identity}")


def will_exist(ctx: PveContext, family: str, identity: str) -> bool:
    """True when a create earlier in this run made, or would make, ``family`` ``identity``."""
    return f"{family}/{identity}" in _expected(ctx)


def _planned_values(ctx: PveContext) -> dict[str, Mapping[str, object]]:
    return ctx.memo.setdefault(f"salt_proxmox.planned-values/{ctx.target.name}", {})


def remember(ctx: PveContext, family: str, identity: str, values: Mapping[str, object]) -> None:
    """Record the canonical values a create or update earlier in this run wrote (or, under
    ``test``, would write) to ``family`` ``identity``, for a later state's refusals to judge by
    (a vnet's tag by its zone's type, a tag's uniqueness among the run's vnets)."""
    _planned_values(ctx)[f"{family}/{identity}"] = dict(values)


def note_declared(ctx: PveContext, family: str, identity: str, keys: Iterable[str]) -> None:
    """Record that a state of this run declared ``family`` ``identity`` and was not refused (it is
    ours, or adopted), with the PVE keys its declaration holds: an apply step that makes pending
    changes live judges by them (``sdn.apply.foreign_changes``)."""
    ctx.memo.setdefault(f"salt_proxmox.declared/{ctx.target.name}", {})[f"{family}/{identity}"] = frozenset(
        keys
    )


def declared(ctx: PveContext, family: str) -> dict[str, frozenset[str]]:
    """``{identity: declared keys}`` of every ``family`` object a state of this run declared (or,
    under ``test``, would), as ``note_declared`` recorded them."""
    prefix = f"{family}/"
    found = ctx.memo.get(f"salt_proxmox.declared/{ctx.target.name}") or {}
    return {key.removeprefix(prefix): keys for key, keys in found.items() if key.startswith(prefix)}


def planned(ctx: PveContext, family: str) -> dict[str, Mapping[str, object]]:
    """``{identity: values}`` of every ``family`` object this run created or updated (or would),
    as ``remember`` recorded them."""
    prefix = f"{family}/"
    return {
        key.removeprefix(prefix): values
        for key, values in _planned_values(ctx).items()
        if key.startswith(prefix)
    }


def audited_listing(
    listing: str, noun: str, privileges: tuple[str, ...], path_of: Callable[[Declared], str], grant: str
) -> Callable[[PveContext, Credential, Declared], None]:
    """A ``confirm_absent`` for a family read from a listing PVE filters by privilege (``GET
    /storage``: Datastore.Audit or Datastore.AllocateSpace; ``GET /cluster/sdn/zones``: SDN.Audit
    or SDN.Allocate): an object the listing lacks is absent only when the read credential holds
    one of ``privileges`` on ``path_of(decl)`` (``GET /access/permissions``,
    ``pve.permissions.held_privileges``). The function raises Refused naming the listing, the
    privileges and ``grant`` (what to grant the read token) otherwise, and what the permissions
    read raises."""

    def confirm(ctx: PveContext, credential: Credential, decl: Declared) -> None:
        path = path_of(decl)
        if not set(privileges) & held_privileges(ctx, credential, path):
            raise Refused(
                f"{decl.label}: {listing} lists only the {noun} the read credential may audit, and it "
                f"holds neither {' nor '.join(privileges)} on {path}, so its absence is not proven. Grant "
                f"the read token {grant}; nothing was written."
            )

    return confirm
