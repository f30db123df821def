"""Configuration read once per state run (``run_config.salt_for_run``): Salt's ``config.get`` walks the
minion config, grains and pillar on every call (salt/modules/config.py ``get``), and each state asked
it for the same three keys."""

from __future__ import annotations

from salt_proxmox.run import config as run_config


def salt_counting(asked: list) -> dict:
    def config_get(key, default=None):
        asked.append(key)
        return {"proxmox:targets": {"lab": {}}}.get(key, default)

    return {"config.get": config_get, "test.ping": lambda: True}


def kwargs(instance: str) -> dict:
    return {
        "__lowstate__": [{"state": "proxmox_lxc", "fun": "present", "__id__": "web"}],
        "__instance_id__": instance,
    }


def test_each_key_is_read_once_per_run_and_again_in_the_next_run() -> None:
    asked: list = []
    salt = salt_counting(asked)
    cache: dict = {}
    for _ in range(50):  # the states of one run
        funcs = run_config.salt_for_run(salt, kwargs("run-1"), cache)
        assert funcs["config.get"]("proxmox:targets", {}) == {"lab": {}}
        assert funcs["config.get"]("openbao", None) is None
        assert funcs["test.ping"]() is True, "every other function is Salt's own"
    assert asked == ["proxmox:targets", "openbao"]
    # A minion may keep __context__ from one run to the next: the next run reads afresh.
    run_config.salt_for_run(salt, kwargs("run-2"), cache)["config.get"]("proxmox:targets", {})
    assert asked == ["proxmox:targets", "openbao", "proxmox:targets"]


def test_outside_a_state_run_every_call_reads_afresh() -> None:
    asked: list = []
    salt = salt_counting(asked)
    for call_kwargs in (None, {}, {"vmid": 150}):
        assert run_config.salt_for_run(salt, call_kwargs, {}) is salt
