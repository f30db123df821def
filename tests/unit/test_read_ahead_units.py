"""Reads ahead without a server (salt_proxmox.pve.readahead): how many are in flight, which read an
answer serves, that each is served once, and the target's ``concurrency`` setting."""

from __future__ import annotations

import threading

import pytest

from salt_proxmox.errors import DeclarationError
from salt_proxmox.pve.client import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    Credential,
    Target,
    new_session,
    parse_target,
)
from salt_proxmox.pve.errors import PveConfigMissing, PveError, PveMalformed
from salt_proxmox.pve.readahead import ReadAhead

READ = Credential("salt@pve!read", "s3cret-read", role="read")
OTHER = Credential("salt@pve!read", "s3cret-read-2", role="read")


class Client:
    """A PveClient stand-in: answers from ``answers`` (a value, or an exception to raise), counts
    what it was asked and how many calls were in flight at once."""

    def __init__(self, answers: dict[str, object], gate: threading.Barrier | None = None):
        self.answers = answers
        self.gate = gate
        self.sent: list[tuple[str, str, Credential]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def request(self, method, path, credential, params=None, form=None, as_json=False):
        with self.lock:
            self.sent.append((method, path, credential))
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                self.gate.wait()
            answer = self.answers[path]
        finally:
            with self.lock:
                self.in_flight -= 1
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_reads_ahead_run_concurrency_at_once_and_never_more():
    """Nine reads with a concurrency of three: three are in flight together (a barrier of three
    would break otherwise) and never a fourth."""
    paths = [f"nodes/pve1/lxc/{vmid}/config" for vmid in range(100, 109)]
    client = Client({path: {"digest": path} for path in paths}, gate=threading.Barrier(3, timeout=20))
    reads = ReadAhead()
    assert reads.fill(client, READ, paths, concurrency=3) == 9
    assert client.most_in_flight == 3
    assert sorted(path for _, path, _ in client.sent) == sorted(paths)
    assert all(method == "GET" and credential is READ for method, _, credential in client.sent)


def test_each_answer_is_served_once_to_a_read_with_the_same_credential():
    path = "nodes/pve1/lxc/150/config"
    client = Client({path: {"digest": "one"}})
    reads = ReadAhead()
    reads.fill(client, READ, [path, path], concurrency=8)
    assert len(client.sent) == 1, "one path, one read"
    assert reads.fill(client, READ, [path], concurrency=8) == 0, "an answer held is not read again"
    assert reads.get(client, path, READ) == {"digest": "one"}
    assert len(client.sent) == 1
    client.answers[path] = {"digest": "two"}
    assert reads.get(client, path, READ) == {"digest": "two"}, "a second read (a read-back) goes to PVE"
    assert len(client.sent) == 2


def test_an_answer_read_with_another_credential_is_not_served():
    """The proof of absence needs the config read and the guest index read with the same token, so a
    credential minted meanwhile reads afresh."""
    path = "nodes/pve1/lxc/150/config"
    text = "Configuration file 'nodes/pve1/lxc/150.conf' does not exist"
    missing = PveConfigMissing("GET", path, 500, text)
    client = Client({path: missing})
    reads = ReadAhead()
    reads.fill(client, READ, [path], concurrency=8)
    client.answers[path] = {"digest": "fresh"}
    assert reads.get(client, path, OTHER) == {"digest": "fresh"}
    assert client.sent[-1] == ("GET", path, OTHER)


@pytest.mark.parametrize(
    "error",
    [
        PveError("GET", "nodes/pve1/lxc/150/config", 403, "Permission check failed (/vms/150, VM.Audit)"),
        PveError("GET", "nodes/pve1/lxc/150/config", 500, "got timeout"),
        PveConfigMissing("GET", "p", 500, "Configuration file 'nodes/pve1/lxc/150.conf' does not exist"),
        PveMalformed("GET", "nodes/pve1/lxc/150/config", "the body is not a JSON object with a data member"),
    ],
    ids=["403", "500", "missing", "malformed"],
)
def test_an_error_read_ahead_is_raised_to_its_reader_only(error):
    """Reading ahead raises nothing; the reader of that path gets the very error, as if it had sent
    the GET; the other paths' answers are untouched."""
    bad, good = "nodes/pve1/lxc/150/config", "nodes/pve1/lxc/151/config"
    client = Client({bad: error, good: {"digest": "d"}})
    reads = ReadAhead()
    assert reads.fill(client, READ, [bad, good], concurrency=2) == 2
    with pytest.raises(type(error)) as raised:
        reads.get(client, bad, READ)
    assert raised.value is error
    assert reads.get(client, good, READ) == {"digest": "d"}
    assert len(client.sent) == 2


def test_a_listing_serves_the_run_until_a_write_forgets_it():
    """A listing several states read (ACL entries, aliases): one GET per run; a failed one is not
    kept; a write in the family drops it, so the next state reads it afresh."""
    client = Client({"access/acl": PveError("GET", "access/acl", 500, "got timeout")})
    reads = ReadAhead()
    with pytest.raises(PveError):
        reads.shared(client, "access/acl", READ)
    client.answers["access/acl"] = [{"path": "/"}]
    assert reads.shared(client, "access/acl", READ) == [{"path": "/"}]
    assert reads.shared(client, "access/acl", READ) == [{"path": "/"}]
    assert len(client.sent) == 2, "the failure, then one successful listing for every later state"
    assert reads.shared(client, "access/acl", OTHER) == [{"path": "/"}]
    assert len(client.sent) == 3, "another credential reads afresh"
    reads.drop_listings()
    reads.shared(client, "access/acl", OTHER)
    assert len(client.sent) == 4


def test_target_concurrency_defaults_to_eight_and_is_checked():
    raw = {"members": ["https://pve1:8006"], "credentials": {"source": "static"}}
    assert parse_target("homelab", raw).concurrency == DEFAULT_CONCURRENCY == 8
    assert parse_target("homelab", {**raw, "concurrency": 3}).concurrency == 3
    for bad in (0, MAX_CONCURRENCY + 1, "8", True, 2.5, None):
        with pytest.raises(DeclarationError, match="proxmox:targets:homelab:concurrency"):
            parse_target("homelab", {**raw, "concurrency": bad})


def test_the_session_keeps_a_connection_per_concurrent_read():
    """One session for the target, its pool as large as the reads in flight, so no thread's
    connection is opened only to be thrown away."""
    target = Target("homelab", ("https://pve1:8006",), concurrency=32)
    adapter = new_session(target).get_adapter("https://pve1:8006/api2/json/version")
    assert adapter._pool_maxsize >= 32
    small = new_session(Target("homelab", ("https://pve1:8006",), concurrency=2))
    assert small.get_adapter("https://pve1:8006/")._pool_maxsize >= 10, "never below requests' own"


def test_another_run_is_never_served_what_an_earlier_run_read():
    """A minion may keep ``__context__`` from one run to the next: a new run (another Salt
    ``__instance_id__``), or a call outside any run, starts with nothing read ahead and no listing."""
    path = "nodes/pve1/lxc/150/config"
    client = Client({path: {"digest": "old"}, "pools": [{"poolid": "prod"}]})
    reads = ReadAhead()
    reads.begin("run-1")
    assert reads.first("proxmox_lxc") and not reads.first("proxmox_lxc")
    reads.fill(client, READ, [path], concurrency=8)
    reads.shared(client, "pools", READ)
    reads.begin("run-1")
    assert reads.answers and reads.listings, "the same run keeps what it read"
    client.answers = {path: {"digest": "new"}, "pools": []}
    reads.begin("run-2")
    assert reads.first("proxmox_lxc"), "a new run reads ahead again"
    assert reads.get(client, path, READ) == {"digest": "new"}
    assert reads.shared(client, "pools", READ) == []
    reads.fill(client, READ, [path], concurrency=8)
    reads.begin(None)
    assert not reads.answers and not reads.listings


def test_a_run_is_parsed_once_for_all_its_states():
    """``run_of`` keeps the parsed chunks of the latest run in the run's cache: N states parse N
    chunks once, not N² (a 1000-state run would otherwise parse a million chunks)."""
    from salt_proxmox.run import config as run_config
    from salt_proxmox.run import lowstate

    chunks = [
        {
            "__id__": f"ct{v}",
            "name": f"ct{v}",
            "state": "proxmox_lxc",
            "fun": "present",
            "vmid": v,
            "node": "pve1",
        }
        for v in range(100, 110)
    ]
    parsed = []
    original = lowstate.Chunk.of

    def counting(low):
        parsed.append(low.get("__id__"))
        return original(low)

    cache: dict = {}
    lowstate.Chunk.of = counting
    try:
        for low in chunks:
            run = run_config.run_of({"__lowstate__": chunks, "__low__": low, "__instance_id__": "A"}, cache)
            assert run.current.state_id == low["__id__"] and len(run.chunks) == 10
        assert len(parsed) == 10 + 10, "the run's chunks once, then each state's own chunk"
        run_config.run_of({"__lowstate__": chunks[:3], "__low__": chunks[0], "__instance_id__": "B"}, cache)
        assert len(run_config.run_of({"__lowstate__": chunks[:3], "__instance_id__": "B"}, cache).chunks) == 3
    finally:
        lowstate.Chunk.of = original
