"""The grain store: rows under ``salt_proxmox:owned`` through the two callables Salt hands over."""

from __future__ import annotations

from salt_proxmox.ownership import FileStore, GrainStore, store_for


class FakeGrains:
    """``grains.get``/``grains.setval`` over a dict, as Salt's execution module behaves."""

    def __init__(self, grains: dict):
        self.grains = grains
        self.setvals = 0

    def get(self, key, default=None):
        return self.grains.get(key, default)

    def setval(self, key, value):
        self.setvals += 1
        self.grains[key] = value


def test_rows_round_trip_and_other_keys_of_the_grain_are_kept():
    grains = FakeGrains({"salt_proxmox": {"owned": {}, "note": "kept"}, "os": "Debian"})
    store = GrainStore(grains.get, grains.setval)
    store.save({"lab/lxc/150": {"phase": "owned"}})
    assert store.load() == {"lab/lxc/150": {"phase": "owned"}}
    assert grains.grains["salt_proxmox"]["note"] == "kept"
    assert grains.grains["os"] == "Debian"


def test_a_grain_of_the_wrong_shape_holds_no_rows():
    # A hand-edited grain that is not a mapping is not rows; the guests then read as unowned and
    # are refused until adopt: true, never taken over.
    for value in ("text", ["a"], {"owned": ["a"]}):
        grains = FakeGrains({"salt_proxmox": value})
        assert GrainStore(grains.get, grains.setval).load() == {}


def test_store_for_prefers_the_ownership_file(tmp_path):
    grains = FakeGrains({})
    assert isinstance(store_for(str(tmp_path / "owned.json"), grains.get, grains.setval), FileStore)
    assert isinstance(store_for(None, grains.get, grains.setval), GrainStore)
