"""The root lane's pure half: its configuration, the pvesh argv, how pvesh's output and failures map
onto the HTTP client's types, and how a change is split between the lane and the token. No server;
a pvesh run here is a script in a temporary directory printing what PVE's pvesh prints.

Sources: pve-manager ``PVE/CLI/pvesh.pm`` (verbs, ``call_api_method``), pve-common
``PVE/Exception.pm`` ``stringify`` (``<code> <msg>`` then ``<param>: <reason>`` lines),
``PVE/CLIFormatter.pm`` ``print_api_result`` (JSON, nothing for ``null``), ``PVE/RESTEnvironment.pm``
``setup_default_cli_env`` (``please run as root``) and ``fork_worker`` (a CLI task in the
foreground: its log lines on stdout, a failure's reason on stderr, then its UPID, exit 0),
pve-manager ``PVE/HTTPServer.pm`` ``rest_handler`` (a bare ``die`` is HTTP 500).
"""

from __future__ import annotations

import stat
from pathlib import Path
from urllib.parse import unquote

import pytest

from salt_proxmox.errors import DeclarationError, Uncertain
from salt_proxmox.guest.change import Change
from salt_proxmox.guest.lane import create_change, create_line, plan_line, route, split
from salt_proxmox.pve.errors import PveConfigMissing, PveError
from salt_proxmox.pve.lane import (
    LaneConfig,
    PveshLane,
    SecretInLane,
    parse_root_lane,
    pvesh_argv,
    pvesh_error,
    pvesh_result,
)
from salt_proxmox.pve.tasks import TaskFailed, await_task

PATH = "nodes/pve1/lxc/120/config"
UPID = "UPID:pve1:0000A1B2:0001C3D4:6650F00D:vzcreate:120:root@pam:"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ("pvesh", LaneConfig("pvesh")),
        (
            {"via": "pvesh", "pvesh": "/usr/bin/pvesh", "timeout": 30},
            LaneConfig("pvesh", "/usr/bin/pvesh", 30.0),
        ),
        (
            {"via": "pvesh", "pve_dir": "/tmp/t/etc/pve", "lock_dir": "/tmp/t/run/lock"},
            LaneConfig("pvesh", pve_dir="/tmp/t/etc/pve", lock_dir="/tmp/t/run/lock"),
        ),
    ],
    ids=["absent", "word", "mapping", "node-dirs"],
)
def test_root_lane_configuration(raw, expected) -> None:
    assert parse_root_lane("lab", raw) == expected


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("ssh", "proxmox:targets:lab:root_lane:via: expected pvesh or ticket, got 'ssh'"),
        # The ticket lane names where root@pam's password is kept (tests/unit/test_root_lane_ticket.py).
        ("ticket", "proxmox:targets:lab:root_lane:password: expected {path: <OpenBao path>"),
        (
            {"via": "pvesh", "pvesh": "bin/pvesh"},
            "proxmox:targets:lab:root_lane:pvesh: expected the absolute path",
        ),
        ({"via": "pvesh", "timeout": 0}, "proxmox:targets:lab:root_lane:timeout: expected a positive number"),
        ({"via": "pvesh", "user": "root"}, "proxmox:targets:lab:root_lane: unknown key(s) user"),
        (
            {"via": "pvesh", "pve_dir": "etc/pve"},
            "proxmox:targets:lab:root_lane:pve_dir: expected an absolute",
        ),
        (["pvesh"], "proxmox:targets:lab:root_lane: expected pvesh, or a mapping"),
    ],
    ids=["unknown-via", "ticket", "relative-path", "timeout", "unknown-key", "relative-pve-dir", "list"],
)
def test_a_bad_root_lane_is_refused_naming_the_key(raw, needle) -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_root_lane("lab", raw)
    assert needle in str(caught.value)


def test_argv_is_pvesh_verb_path_params_and_json_output() -> None:
    argv = pvesh_argv(
        "/usr/bin/pvesh", "PUT", "nodes/pve1/lxc/120/config", {"mp1": "/srv/a,mp=/a", "digest": "ab"}
    )
    assert argv == [
        "/usr/bin/pvesh", "set", "/nodes/pve1/lxc/120/config",
        "--mp1", "/srv/a,mp=/a", "--digest", "ab", "--output-format", "json",
    ]  # fmt: skip
    # The client's percent-encoded labels are decoded: pvesh routes the raw path.
    assert (
        pvesh_argv("p", "GET", "nodes/pve1/tasks/UPID%3Apve1%3Ax/status")[2]
        == "/nodes/pve1/tasks/UPID:pve1:x/status"
    )
    assert [pvesh_argv("p", m, "x")[1] for m in ("GET", "POST", "PUT", "DELETE")] == [
        "get",
        "create",
        "set",
        "delete",
    ]
    with pytest.raises(ValueError):
        pvesh_argv("p", "PATCH", "x")


def test_a_coded_exception_keeps_its_status_and_message() -> None:
    error = pvesh_error(
        "PUT", PATH, 255, "403 Permission check failed (mount point type bind is only allowed for root@pam)\n"
    )
    assert error.status == 403
    assert error.message == "Permission check failed (mount point type bind is only allowed for root@pam)"


def test_a_parameter_exception_keeps_each_field_and_drops_the_usage() -> None:
    stderr = (
        "400 Parameter verification failed.\ncores: value must have a minimum value of 1\n"
        "memory: type check ('integer') failed - got 'x'\n"
        "pvesh set <api_path> [OPTIONS] [FORMAT_OPTIONS]\n"
    )
    error = pvesh_error("PUT", PATH, 255, stderr)
    assert error.status == 400
    assert error.errors == {
        "cores": "value must have a minimum value of 1",
        "memory": "type check ('integer') failed - got 'x'",
    }


def test_a_bare_die_is_a_500_as_pveproxy_answers_it() -> None:
    stale = pvesh_error(
        "PUT", PATH, 255, "detected modified configuration - file changed by other user? Try again.\n"
    )
    assert stale.status == 500 and "plan again" in str(stale)
    missing = pvesh_error("GET", PATH, 2, "Configuration file 'nodes/pve1/lxc/999.conf' does not exist\n")
    assert isinstance(missing, PveConfigMissing)
    perl = pvesh_error(
        "PUT", PATH, 255, "unable to parse value at /usr/share/perl5/PVE/LXC/Config.pm line 12.\n"
    )
    assert perl.message == "unable to parse value"
    assert pvesh_error("PUT", PATH, 1, "").status == 500


def test_output_is_the_last_json_value() -> None:
    assert pvesh_result("PUT", PATH, "") is None
    assert pvesh_result("GET", PATH, '{\n   "cores" : 1\n}\n') == {"cores": 1}
    assert pvesh_result("POST", PATH, f'extracting archive\nTASK OK\n"{UPID}"\n') == UPID
    with pytest.raises(Uncertain):
        pvesh_result("PUT", PATH, "something that is not JSON\n")
    with pytest.raises(ValueError):
        pvesh_result("GET", PATH, "not JSON")


def test_a_cut_off_answer_is_never_taken_for_one() -> None:
    """print_api_result prints the answer as JSON starting a line: the tail of a UPID cut off
    (``…:6650F00D`` cut after ``66``) holds a number, which is no answer; PVE may have acted."""
    with pytest.raises(Uncertain, match="may or may not have acted"):
        pvesh_result("PUT", PATH, f'"{UPID[:30]}')
    with pytest.raises(Uncertain):
        pvesh_result("POST", PATH, f'extracting archive\n"{UPID[:30]}\n')


def test_a_lane_task_is_awaited_through_pvesh_and_its_log_named(tmp_path: Path) -> None:
    """A task a lane write started is its owner's, root@pam's: polled through pvesh, and a
    failure names the command that reads its log (pve-manager ``PVE/API2/Tasks.pm``)."""
    status = '{"status": "stopped", "exitstatus": "cannot lock file"}'
    lane = PveshLane(LaneConfig("pvesh", _script(tmp_path, f"echo '{status}'\n")))
    with pytest.raises(TaskFailed, match=f"pvesh get /nodes/pve1/tasks/{UPID}/log") as failed:
        await_task(lane, None, "pve1", UPID, "write mp1 via root lane", polls=1, sleep=lambda _s: None)
    assert "cannot lock file" in str(failed.value)
    assert [(method, unquote(path)) for method, path in lane.sent] == [
        ("GET", f"nodes/pve1/tasks/{UPID}/status")
    ]


def _script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "pvesh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(stat.S_IRWXU)
    return str(script)


def test_a_pvesh_call_maps_its_exit_and_stderr(tmp_path: Path) -> None:
    lane = PveshLane(LaneConfig("pvesh", _script(tmp_path, 'echo "please run as root" >&2\nexit 255\n')))
    with pytest.raises(PveError, match="please run as root"):
        lane.request("GET", "cluster/status")
    ok = PveshLane(LaneConfig("pvesh", _script(tmp_path, 'echo "[{\\"type\\": \\"node\\"}]"\n')))
    assert ok.request("GET", "cluster/status") == [{"type": "node"}]


def test_a_secret_never_goes_through_pvesh(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    lane = PveshLane(LaneConfig("pvesh", _script(tmp_path, f"touch {ran}\n")))
    with pytest.raises(SecretInLane, match="password: a secret never goes through the root lane") as caught:
        lane.request("PUT", PATH, form={"password": "hunter2-secret"}, secrets=("password",))
    assert "hunter2-secret" not in str(caught.value)
    assert not ran.exists(), "nothing is run"


def test_a_missing_pvesh_is_not_run(tmp_path: Path) -> None:
    assert PveshLane(LaneConfig("pvesh", str(tmp_path / "none"))).executable() is None
    with pytest.raises(PveError, match="pvesh cannot be run"):
        PveshLane(LaneConfig("pvesh", str(tmp_path / "none"))).request("GET", "version")


def _root_change() -> Change:
    change = Change(put={"memory": "1024"}, drift=["memory", "mp1"])
    change.root_write("mp1", "/srv/a,mp=/a", "mp1: A bind or device mount point. ... pct set ...")
    return change


def test_a_change_splits_into_the_token_write_and_the_lane_write() -> None:
    token, put, clear = split(_root_change())
    assert (token.put, token.clear, token.root) == ({"memory": "1024"}, [], {})
    assert (put, clear) == ({"mp1": "/srv/a,mp=/a"}, [])
    line = plan_line("CT 120 on pve1", _root_change(), "pvesh on pve1")
    assert (
        line
        == "CT 120 on pve1: would write mp1 via root lane (pvesh on pve1); memory with the provision token"
    )


class _Ctx:
    """What ``route`` reads of a context without a lane."""

    lane = None

    class target:
        name = "lab"


def test_without_a_lane_root_keys_are_refused_naming_the_lane() -> None:
    via, refusals = route(_Ctx(), _root_change())
    assert via is None
    assert refusals[0].startswith("mp1: A bind or device mount point.")
    assert "configure proxmox:targets:lab:root_lane: pvesh" in refusals[1]
    assert route(_Ctx(), Change(put={"memory": "1"})) == (None, [])


def test_a_create_s_root_keys_are_one_lane_write_or_refused_naming_the_lane() -> None:
    # qemu-server create_vm ($check_vm_modify_config_perm: "only root can set 'args' config"): the
    # token's create leaves them out, the lane writes them after it (guest.lane.create_write).
    from salt_proxmox.qemu.family import QEMU
    from salt_proxmox.qemu.props import parse_declaration

    decl = parse_declaration(
        "web", vmid=150, node="pve1", target="lab", config={"args": "-device foo", "usb0": "host=1234:5678"}
    )
    change = create_change(QEMU, decl)
    assert change.put == {"args": "-device foo", "usb0": "host=1234:5678"} and change.clear == []
    assert "args" not in QEMU.create_form(decl) and "usb0" not in QEMU.create_form(decl)
    assert (
        create_line(change, "pvesh on pve1")
        == " with the provision token; then write args, usb0 via root lane (pvesh on pve1)"
    )
    via, refusals = route(_Ctx(), change)
    assert via is None and "qm create 150" in refusals[0] and "adopt: true" in refusals[0]
    assert "configure proxmox:targets:lab:root_lane: pvesh" in refusals[-1]
