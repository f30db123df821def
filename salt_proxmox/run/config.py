"""Building a target's context from Salt-shaped configuration (no Salt import).

The Salt modules hand over plain data — the ``proxmox:targets`` mapping (read with
``config.get`` so it can live in minion config or pillar), the ``openbao:`` block, the run's
cache (``__context__``) and an ownership store — and get back a ``PveContext``. The few rules
both execution modules (``proxmox`` and ``openbao``) follow live here too: where ownership rows
go (``salt_store``), which keyword arguments are Salt's own (``declared_keys``), and the state
return of a call that could not even start (``refused_return``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping

import requests

from salt_proxmox.errors import DeclarationError, SaltProxmoxError
from salt_proxmox.openbao.client import OpenBaoError, connect
from salt_proxmox.openbao.creds import BAO_CLIENT, CredentialBroker
from salt_proxmox.outcome import Outcome
from salt_proxmox.ownership.bao import OpenBaoStore, OwnershipBaoError, parse_ownership
from salt_proxmox.ownership.files import FileStore, GrainStore, MinionStore
from salt_proxmox.ownership.keeper import Ownership
from salt_proxmox.ownership.stores import OwnershipStore, grains_file, rows_file
from salt_proxmox.pve.client import PveClient, Target, new_session, parse_target
from salt_proxmox.pve.lane import LaneConfig, PveshLane, parse_root_lane
from salt_proxmox.pve.readahead import ReadAhead
from salt_proxmox.pve.ticket import TicketLane
from salt_proxmox.run import grain as owned_grain
from salt_proxmox.run import overlap
from salt_proxmox.run.context import PveContext
from salt_proxmox.run.lowstate import KeysOf, Run, twins_refusal
from salt_proxmox.run.memo import RunMemo, keep_run

#: The ``config.get`` key naming the JSON file that holds ownership rows instead of the grain.
OWNERSHIP_FILE = "proxmox:ownership_file"

#: The ``config.get`` key choosing where ownership rows live (``ownership.bao.parse_ownership``).
OWNERSHIP = "proxmox:ownership"


def bao_store(
    salt: Mapping[str, Callable[..., object]], context: MutableMapping, run: object
) -> OpenBaoStore | None:
    """The ``OpenBaoStore`` ``proxmox:ownership`` names (``store: openbao``), else None (a file).
    Made once per state run (``run``: the run's key, from ``RunSalt``), so every run reads the rows
    afresh; a call outside a run makes its own. It logs in with the ``openbao:`` block the targets'
    credentials use, and shares that client with them.

    Raises DeclarationError naming a bad ``proxmox:ownership`` key, or when
    ``proxmox:ownership_file`` names a file as well; OwnershipFileError (``OwnershipBaoError``)
    when OpenBao cannot log in.
    """
    config = parse_ownership(salt["config.get"](OWNERSHIP, None))
    if config["store"] != "openbao":
        return None
    if salt["config.get"](OWNERSHIP_FILE, None):
        raise DeclarationError(
            f"{OWNERSHIP_FILE}: rows are kept in OpenBao ({OWNERSHIP}:store: openbao); name one place only"
        )
    key = f"salt_proxmox.store/openbao/{config['mount']}/{config['path']}"
    kept = context.get(key)
    if run is not None and isinstance(kept, tuple) and kept[0] == run:
        return kept[1]
    client = context.get(BAO_CLIENT)
    if client is None:
        openbao = salt["config.get"]("openbao", None)
        if openbao is None:
            raise DeclarationError(f"{OWNERSHIP}:store: openbao needs the openbao: block (url, auth)")
        try:
            client = context[BAO_CLIENT] = connect(openbao)
        except OpenBaoError as exc:
            raise OwnershipBaoError(f"ownership rows in OpenBao: {exc}") from None
    store = OpenBaoStore(client, config["mount"], config["path"], config["lock_timeout"], config["lock_ttl"])
    context[key] = (run, store)
    return store


def salt_store(
    salt: Mapping[str, Callable[..., object]],
    opts: Mapping[str, object],
    context: MutableMapping,
    grains: MutableMapping,
    proxy: bool = False,
) -> OwnershipStore:
    """The ownership store of a minion, made once per run (kept in ``__context__``).

    OpenBao when ``proxmox:ownership`` says ``store: openbao`` (``bao_store``); else the JSON file
    ``config.get('proxmox:ownership_file')`` names (salt-ssh, where grains do not
    last: roster ``minion_opts``, minion config or pillar), else the minion's rows file beside its
    grains file (``MinionStore``; ``proxy``: this is a proxy minion), shown as the
    ``salt_proxmox:owned`` grain. After a row is written, ``grains`` (Salt's ``__grains__``) holds
    it, and a minion that is not ``--local`` reloads its grains (``saltutil.refresh_modules``) once
    per state run, after the run's last state of this project (``run.grain.GrainRefresh``, asked by
    ``run_with_grain``), or at once for a row an ad-hoc call wrote, so ``grains.get
    salt_proxmox:owned`` shows the rows.
    """
    bao = bao_store(salt, context, getattr(salt, "run", None))
    if bao is not None:
        return bao
    path = salt["config.get"](OWNERSHIP_FILE, None)
    key = f"salt_proxmox.store/{path or grains_file(opts, proxy)}"
    store = context.get(key)
    if isinstance(store, FileStore):
        return store

    def saved(row_key: str, row: dict | None) -> None:
        # The one row changed, not a copy of every row: a write costs the same at any N.
        grain = grains.get(GrainStore.GRAIN)
        grain = dict(grain) if isinstance(grain, dict) else {}
        owned = grain.get("owned") if isinstance(grain.get("owned"), dict) else {}
        if row is None:
            owned.pop(row_key, None)
        else:
            owned[row_key] = row
        grain["owned"] = owned
        grains[GrainStore.GRAIN] = grain
        if not opts.get("local", False) and owned_grain.of(context).row_changed():
            salt["saltutil.refresh_modules"]()

    store = FileStore(path) if path else MinionStore(rows_file(opts, proxy), grains_file(opts, proxy), saved)
    context[key] = store
    return store


def run_with_grain(
    salt: Mapping[str, Callable[..., object]],
    opts: Mapping[str, object],
    context: MutableMapping,
    dunders: Mapping[str, object],
    store: Callable[[], OwnershipStore],
    grains: Callable[[], Mapping],
    call: Callable[[], dict],
) -> dict:
    """``call()`` (one state of this project; ``dunders``: its state module's namespace, holding the
    run) with the ``salt_proxmox:owned`` grain reloaded once per run (``run.grain.GrainRefresh``): after
    the run's last state of this project, or after a state that failed, when a row changed in the
    run or the grain ``grains()`` (Salt's ``__grains__``, as the minion serves it; read only then)
    differs from the rows of ``store()`` (a ``MinionStore``) at the run's first state.

    The reload is ``saltutil.refresh_modules`` (Salt's only reload of a minion's grains, Salt 3008
    ``salt/minion.py`` ``Minion.module_refresh``), awaited in a minion daemon's job
    (``async=False``: the return reaches the master after the grain is current, so a
    ``grains.get`` sent next sees every row) and only asked for from ``salt-call``, which may
    have no daemon to answer. Nothing at all with ``--local``, where nothing else serves grains.
    """
    if opts.get("local", False):
        return call()
    refresh = owned_grain.of(context)

    def stale() -> bool:
        try:
            kept = store()
            rows = kept.load() if isinstance(kept, MinionStore) else None
        except SaltProxmoxError:
            return False  # the state itself fails on the file, naming it
        served = grains().get(GrainStore.GRAIN)
        served = served.get("owned") if isinstance(served, Mapping) else None
        return rows is not None and (served or {}) != rows

    refresh.enter(run_of(dunders, context), stale)
    failed = True
    try:
        ret = call()
        failed = not isinstance(ret, Mapping) or ret.get("result") is False
        return ret
    finally:
        if refresh.left(failed):
            wait = opts.get("__cli") != "salt-call"
            salt["saltutil.refresh_modules"](**{"async": not wait})


class RunSalt(Mapping):
    """Salt's ``__salt__`` as one state run sees it: ``config.get`` answers each (key, default) once
    per run, every other function is Salt's own. Each state asked ``config.get`` for the targets, the
    ``openbao`` block and the ownership file again, and Salt walks the minion config, grains and
    pillar for each (``salt/modules/config.py`` ``get``): about a millisecond a state."""

    def __init__(self, salt: Mapping[str, Callable[..., object]], run: object):
        self.salt = salt
        self.run = run
        self._answers: dict[tuple[str, str], object] = {}

    def config_get(self, key: str, default: object = None) -> object:
        """``config.get(key, default)``, read once per run."""
        slot = (key, repr(default))
        if slot not in self._answers:
            self._answers[slot] = self.salt["config.get"](key, default)
        return self._answers[slot]

    def __getitem__(self, name: str) -> Callable[..., object]:
        return self.config_get if name == "config.get" else self.salt[name]

    def __iter__(self):
        return iter(self.salt)

    def __len__(self) -> int:
        return len(self.salt)


def salt_for_run(
    salt: Mapping[str, Callable[..., object]], kwargs: Mapping[str, object] | None, cache: MutableMapping
) -> Mapping[str, Callable[..., object]]:
    """``salt`` with ``config.get`` read once per state run (``RunSalt``, kept in ``cache``, Salt's
    ``__context__``, for the run ``kwargs`` belong to), or ``salt`` itself outside a state run (an
    ad-hoc call reads its configuration afresh). Another run, even in a minion that keeps
    ``__context__``, never sees this run's answers."""
    run = Run.of(kwargs, cache) if kwargs else None
    if run is None:
        return salt
    kept = cache.get("salt_proxmox.config")
    if not (isinstance(kept, RunSalt) and kept.run == run.key and kept.salt is salt):
        kept = RunSalt(salt, run.key)
        cache["salt_proxmox.config"] = kept
    return kept


def declared_keys(kwargs: Mapping[str, object]) -> dict[str, object]:
    """The keyword arguments a Salt call was given, without Salt's own (``__pub_fun``,
    ``__env__``, every ``__``-prefixed key), so the library sees, and refuses by name, only what
    was declared."""
    return {key: value for key, value in kwargs.items() if not key.startswith("__")}


def pillar_secrets(
    secrets: frozenset[str] | set[str],
    declared: Mapping[str, object],
    path: object,
    lookup: Callable[[object], object],
) -> dict[str, object]:
    """The keys of ``secrets`` (a family's ``SECRETS``, ``registry.Kind.secrets``) that the pillar
    mapping at ``path`` holds (``secrets_pillar``: a colon-delimited path, or a list of its keys, read
    with ``lookup``), ``{}`` when no path is given. The values never appear in a message.

    Raises DeclarationError when a secret is one of the state's own arguments (``declared["__low__"]``:
    Salt keeps a state's arguments in ``highstate.cache.p`` in its cachedir and in the lowstate every
    state is handed), is given both as an argument and in pillar, or the path holds no mapping."""
    low = declared.get("__low__") or {}
    passed = sorted(key for key in secrets if isinstance(low, Mapping) and key in low)
    if passed:
        raise DeclarationError(
            f"{', '.join(passed)}: a secret is never a state argument (Salt keeps those in highstate.cache.p "
            "in its cachedir): declare it in pillar and give the state secrets_pillar, the pillar path of "
            "the mapping holding it, as the proxmox formula does"
        )
    if path is None:
        return {}
    if not (isinstance(path, str) and path) and not (
        isinstance(path, list) and path and all(isinstance(part, str) for part in path)
    ):
        raise DeclarationError(
            "secrets_pillar: expected a pillar path (proxmox:lxc:web) or a list of its keys"
        )
    entry = lookup(path)
    shown = path if isinstance(path, str) else ":".join(path)
    if not isinstance(entry, Mapping):
        raise DeclarationError(f"secrets_pillar: pillar {shown} holds no mapping")
    twice = sorted(key for key in secrets if key in declared and key in entry)
    if twice:
        raise DeclarationError(f"{', '.join(twice)}: given both as an argument and in pillar {shown}")
    return {key: entry[key] for key in sorted(secrets) if key in entry}


def outcome_return(name: str, fun: Callable[..., Outcome], ctx: object, /, *args, **kwargs) -> dict:
    """The state return of ``fun(ctx, *args, **kwargs)`` (a library plan/apply), or a failure
    naming the cause when ``fun`` raises one of this package's errors (an ownership row that could
    not be recorded) instead of a traceback."""
    try:
        return fun(ctx, *args, **kwargs).salt_return(name)
    except SaltProxmoxError as exc:
        return Outcome().fail(str(exc)).salt_return(name)


def refused_return(name: str, exc: Exception) -> dict:
    """The state return of a call refused before it could start (no target, no OpenBao block):
    ``result`` False, ``Refused: <exc>``, and that nothing was written."""
    return Outcome().fail(f"Refused: {exc}", "Nothing was written.").salt_return(name)


def run_of(kwargs: Mapping[str, object], cache: MutableMapping) -> Run | None:
    """The state run a call's keyword arguments hold (``__lowstate__``, ``__low__``,
    ``__instance_id__``), or None outside a state run; its chunks are parsed once per run and
    kept in ``cache`` (Salt's ``__context__``), as ``lowstate.Run.of`` does."""
    return Run.of(kwargs, cache)


def twins_return(
    name: str,
    kwargs: Mapping[str, object],
    states: tuple[str, ...],
    keys_of: KeysOf,
    cache: MutableMapping | None = None,
) -> dict | None:
    """The state return refusing a declaration whose object another state of the same run
    declares (``lowstate.twins_refusal``), else None. ``kwargs``: the call's keyword arguments,
    holding the run the state module passed through (``__lowstate__``, ``__low__``); outside a
    state run there is none and nothing is refused. ``cache``: the run's cache, so the run is
    parsed once (``run_of``)."""
    run = Run.of(kwargs, cache)
    refusal = twins_refusal(run, states, keys_of)
    if refusal is None:
        return None
    return Outcome().refuse(DeclarationError(refusal)).salt_return(name)


def enter_run(ctx: PveContext, kwargs: Mapping[str, object], cache: MutableMapping) -> Run | None:
    """The run a state's call belongs to (``run_of``), with ``ctx``'s reads ahead and memo serving
    it: what another run, or a call outside any run, read or learned is never served to it. The memo
    holds the run (``RunMemo.chunks``)."""
    run = run_of(kwargs, cache)
    ctx.begin(None if run is None else run.key)
    if run is not None:
        keep_run(ctx.memo, run)
    return run


def read_ahead(
    ctx: PveContext,
    kwargs: Mapping[str, object],
    state: str,
    default: str | None,
    reader: Callable[[PveContext, list[Mapping[str, object]]], int],
    cache: MutableMapping,
) -> int:
    """Once per run and ``state``: hand ``reader`` (a family's ``read_ahead``) the arguments of
    the run's ``state`` (``proxmox_lxc``) ``present`` chunks on ``ctx``'s target, in run order;
    returns what it sent (0 for every later state of the run). ``kwargs``: the call's keyword
    arguments holding the run; outside a state run there is none and nothing is read ahead.
    ``default``: the target of a chunk naming none; ``cache``: the run's cache. Call
    ``enter_run`` first."""
    run = run_of(kwargs, cache)
    if run is None or not ctx.reads.first(state):
        return 0
    chunks = [chunk.args for chunk in run.declared(state, ctx.target.name, default) if chunk.fun == "present"]
    return reader(ctx, chunks)


def default_target(targets: object) -> str | None:
    """The target a declaration naming none is on: the only one configured, else None."""
    if isinstance(targets, Mapping) and len(targets) == 1:
        return str(next(iter(targets)))
    return None


def pick_target(targets: object, name: str | None, section: str = "proxmox:targets") -> str:
    """The target name to use: ``name``, or the only one configured under ``section``.

    Raises DeclarationError when there are none, several and none named, or the named one is
    missing.
    """
    if not isinstance(targets, Mapping) or not targets:
        raise DeclarationError(f"{section}: no target is configured (minion config or pillar)")
    if name is None:
        if len(targets) != 1:
            raise DeclarationError(
                f"target: several targets are configured ({', '.join(sorted(map(str, targets)))}); name one"
            )
        return str(next(iter(targets)))
    if name not in targets:
        raise DeclarationError(
            f"target: {name!r} is not in {section} ({', '.join(sorted(map(str, targets)))})"
        )
    return name


def make_lane(
    config: LaneConfig | None,
    target: Target,
    session: requests.Session,
    broker: CredentialBroker,
    memo: RunMemo,
) -> PveshLane | TicketLane | None:
    """The lane a target's ``root_lane`` configures (``pve.lane.parse_root_lane``), or None. The
    ticket lane calls ``target``'s members over the run's ``session``, reads root@pam's password
    through ``broker``'s OpenBao connection and keeps its ticket in the run's ``memo``
    (``pve.ticket``); the pvesh lane needs none of them (``pve.lane.PveshLane``)."""
    if config is None:
        return None
    if config.via == "ticket":
        return TicketLane(config, target, session, broker, memo)
    return PveshLane(config)


def context_for(
    targets: object,
    name: str | None,
    openbao: Mapping | None,
    cache: MutableMapping,
    store: OwnershipStore,
    slots_dir: str | None = None,
) -> PveContext:
    """A ``PveContext`` for one target, reusing the run's HTTP session, read credential and
    reads ahead (in a process Salt forked for a ``parallel`` state, its own connections:
    ``overlap.own_connections``). ``slots_dir``: where the minion keeps its task slots
    (``overlap.slots_dir``), used when the target's guest tasks overlap (``task_concurrency`` above 1).

    ``root_lane`` (``pve.lane.parse_root_lane``) becomes the context's ``lane`` (``make_lane``: the
    ticket lane shares the run's session, OpenBao connection and memo).

    Raises DeclarationError for a missing or malformed target (a bad ``root_lane`` named by key).
    """
    chosen = pick_target(targets, name)
    target = parse_target(chosen, targets[chosen])
    lane_config = parse_root_lane(chosen, target.root_lane, target.credentials.get("source"))
    overlap.own_connections(cache)
    session_key = f"salt_proxmox.session/{chosen}"
    session = cache.get(session_key)
    if not isinstance(session, requests.Session):
        session = new_session(target)
        cache[session_key] = session
    client_key = f"salt_proxmox.client/{chosen}"
    client = cache.get(client_key)
    if not isinstance(client, PveClient) or client.target != target:
        client = PveClient(target, session)
        cache[client_key] = client
    reads_key = f"salt_proxmox.reads/{chosen}"
    reads = cache.get(reads_key)
    if not isinstance(reads, ReadAhead):
        reads = ReadAhead()
        cache[reads_key] = reads
    memo_key = f"salt_proxmox.memo/{chosen}"
    memo = cache.get(memo_key)
    if not isinstance(memo, RunMemo):
        memo = RunMemo()
        cache[memo_key] = memo
    broker = CredentialBroker(target, cache, openbao)
    lane = make_lane(lane_config, target, session, broker, memo)
    # ``extra`` is the run's cache, so what is read once per run (pve.facts) is read once, and a
    # failed network apply stops the later ones of the run.
    slots = None
    if slots_dir is not None and target.task_concurrency > 1:
        bounds = (target.task_concurrency, target.task_concurrency_per_node)
        slots = overlap.TaskSlots(slots_dir, target.name, *bounds)
    return PveContext(
        target=target,
        client=client,
        broker=broker,
        ownership=Ownership(store),
        reads=reads,
        memo=memo,
        slots=slots,
        lane=lane,
    )
