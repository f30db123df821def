"""A container's raw ``lxc.*`` lines: declared as an ordered list, judged against what PVE reads,
and written into the config file on the node, under PVE's own config lock.

PVE keeps them as lines of ``/etc/pve/nodes/<node>/lxc/<vmid>.conf`` (pve-container
``src/PVE/LXC/Config.pm`` ``parse_pct_config``: a line ``lxc.<key>: <value>`` of the main section
becomes a ``[key, value]`` pair of ``$conf->{lxc}``, in file order; ``write_pct_config`` writes them
after the other keys). ``GET …/config`` answers them as ``lxc`` (``API2/LXC/Config.pm``
``vm_config``), so the read token sees them; no API call writes them (``update_pct_config`` has no
such key), so only root on the node can, by editing the file. Keys follow ``is_valid_lxc_conf_key``:
the names in ``$valid_lxc_conf_keys``, any ``lxc.cgroup2.*``, ``lxc.prlimit.*`` and ``lxc.net.*``;
``lxc.rootfs.path`` and ``lxc.rootfs.options`` are refused with PVE's words, and
``lxc.environment.runtime`` is the ``env`` key's. Order is meaning (``lxc.cgroup2.devices.deny``
before ``allow``), so the declared list is compared as a list.

The write (``write_lines``) runs on the container's own node (the lock is that node's flock):
``lock_config`` (pve-guest-common ``PVE/AbstractConfig.pm`` ``lock_config`` → pve-common
``PVE/Tools.pm`` ``lock_file_full``: an exclusive ``flock`` on ``/run/lock/lxc/pve-config-<vmid>.lock``
within 10 s), then under it: the file's SHA-1 must be the digest the write was judged on
(``parse_pct_config``: ``digest => sha1_hex($raw)``, what ``GET …/config`` answers), the config must
hold no ``lock`` (``AbstractConfig.pm`` ``check_lock``), the main section's ``lxc.*`` lines are
replaced and every other line is kept byte for byte, and the file is replaced atomically
(``PVE::Tools::file_set_contents``: a temporary file renamed over it); the file is read again before
the lock is released and must be what was written. The lines take effect when the container starts
(``PVE::LXC::update_lxc_config`` writes LXC's own config at each start): a running container shows
them as pending until its restart.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import time
from collections.abc import Mapping, Sequence

from salt_proxmox.errors import Refused, Uncertain

#: The declaration's key, and PVE's answer's.
KEY = "lxc"
#: pve-container ``LXC/Config.pm`` ``$valid_lxc_conf_keys`` (pve-container 5.x and 6.x alike).
VALID = frozenset(
    {
        "lxc.apparmor.profile",
        "lxc.apparmor.allow_incomplete",
        "lxc.apparmor.allow_nesting",
        "lxc.apparmor.raw",
        "lxc.selinux.context",
        "lxc.include",
        "lxc.arch",
        "lxc.uts.name",
        "lxc.signal.halt",
        "lxc.signal.reboot",
        "lxc.signal.stop",
        "lxc.init.cmd",
        "lxc.init.cwd",
        "lxc.init.uid",
        "lxc.init.gid",
        "lxc.init.groups",
        "lxc.pty.max",
        "lxc.console.logfile",
        "lxc.console.path",
        "lxc.tty.max",
        "lxc.devtty.dir",
        "lxc.hook.autodev",
        "lxc.autodev",
        "lxc.kmsg",
        "lxc.mount.fstab",
        "lxc.mount.entry",
        "lxc.mount.auto",
        "lxc.rootfs.mount",
        "lxc.cap.drop",
        "lxc.cap.keep",
        "lxc.seccomp.profile",
        "lxc.seccomp.notify.proxy",
        "lxc.seccomp.notify.cookie",
        "lxc.idmap",
        "lxc.hook.pre-start",
        "lxc.hook.pre-mount",
        "lxc.hook.mount",
        "lxc.hook.start",
        "lxc.hook.stop",
        "lxc.hook.post-stop",
        "lxc.hook.clone",
        "lxc.hook.destroy",
        "lxc.hook.version",
        "lxc.log.level",
        "lxc.log.file",
        "lxc.start.auto",
        "lxc.start.delay",
        "lxc.start.order",
        "lxc.group",
        "lxc.environment",
        "lxc.environment.hooks",
        "lxc.sysctl.fs.mqueue",
        "lxc.sysctl.kernel.msgmax",
        "lxc.sysctl.kernel.msgmnb",
        "lxc.sysctl.kernel.msgmni",
        "lxc.sysctl.kernel.sem",
        "lxc.sysctl.kernel.shmall",
        "lxc.sysctl.kernel.shmmax",
        "lxc.sysctl.kernel.shmmni",
        "lxc.sysctl.kernel.shm_rmid_forced",
    }
)
#: Keys ``$valid_lxc_conf_keys`` maps to PVE's refusal instead of 1.
REFUSED = {
    "lxc.rootfs.path": "lxc.rootfs.path is auto generated from rootfs",
    "lxc.rootfs.options": "lxc.rootfs.options is not supported",
    "lxc.environment.runtime": "PVE keeps it as the env key (parse_pct_config); declare env instead",
}
_PREFIXES = ("lxc.cgroup2.", "lxc.prlimit.", "lxc.net.")
_NAME = re.compile(r"^lxc\.[a-z0-9_\-.]+\Z")
#: ``parse_pct_config``'s raw-line pattern, and its section headers.
_LINE = re.compile(r"^(lxc\.[a-z0-9_\-.]+)(:|\s*=)\s*(.*?)\s*$")
_SECTION = re.compile(r"^\[[^\]]+\]\s*$")
_LOCKED = re.compile(r"^lock:\s*(\S+)")
LOCK_TIMEOUT = 10.0


def key_problem(key: str) -> str | None:
    """Why ``key`` is not a raw key PVE takes (``is_valid_lxc_conf_key``), or None."""
    if not _NAME.match(key):
        return f"{key!r} is not an lxc.* key"
    if key in REFUSED:
        return REFUSED[key]
    if key in VALID or key.startswith(_PREFIXES):
        return None
    return f"{key} is not a key pve-container accepts (LXC/Config.pm is_valid_lxc_conf_key)"


def declared_text(raw: object) -> tuple[str, list[str]]:
    """``lxc`` as declared — a list of ``[key, value]`` pairs (or ``"key: value"`` strings), in
    order — as the text this product compares and writes (``render``), and each problem naming
    its index. An empty list declares no raw lines (those live are removed)."""
    where = KEY
    if not isinstance(raw, list):
        return "", [f"{where}: expected an ordered list of [key, value] pairs"]
    pairs, problems = [], []
    for index, item in enumerate(raw):
        if isinstance(item, str) and ":" in item:
            item = [part.strip() for part in item.split(":", 1)]
        if not (isinstance(item, list | tuple) and len(item) == 2 and all(isinstance(p, str) for p in item)):
            problems.append(f"{where}[{index}]: expected [key, value], two strings")
            continue
        key, value = item[0].strip(), item[1].strip()
        problem = key_problem(key)
        if problem is None and ("\n" in value or "\r" in value):
            problem = "a value holds no line break (write_pct_config: invalid newline)"
        if problem:
            problems.append(f"{where}[{index}]: {problem}")
        pairs.append((key, value))
    return render(pairs), problems


def render(pairs: object) -> str:
    """Raw pairs (PVE's ``lxc`` answer: a list of ``[key, value]``) as lines ``key: value``, in
    order; anything else (no raw lines) as ``''``."""
    if not isinstance(pairs, list | tuple):
        return ""
    return "\n".join(f"{p[0]}: {p[1]}" for p in pairs if isinstance(p, list | tuple) and len(p) == 2)


def pairs(text: str) -> list[list[str]]:
    """``render``'s text back as the declared list of ``[key, value]`` pairs."""
    return [[part.strip() for part in line.split(":", 1)] for line in text.splitlines() if ":" in line]


def diff(have: str, want: str) -> str:
    """The plan's words for a change of raw lines: ``-`` each line going, ``+`` each coming."""
    old, new = have.splitlines(), want.splitlines()
    gone = [f"- {line}" for line in old if line not in new]
    come = [f"+ {line}" for line in new if line not in old]
    moved = [] if gone or come else ["(the same lines in another order)"]
    return "; ".join([*gone, *come, *moved])


def config_path(pve_dir: str, node: str, vmid: int) -> str:
    """``<pve_dir>/nodes/<node>/lxc/<vmid>.conf`` (pve-container ``LXC/Config.pm`` ``cfs_config_path``)."""
    return os.path.join(pve_dir, "nodes", node, "lxc", f"{vmid}.conf")


def lock_path(lock_dir: str, vmid: int) -> str:
    """``<lock_dir>/lxc/pve-config-<vmid>.lock`` (pve-container ``LXC/Config.pm`` ``config_file_lock``)."""
    return os.path.join(lock_dir, "lxc", f"pve-config-{vmid}.lock")


def replace_lines(raw: str, want: str) -> str:
    """``raw`` (a config file) with its main section's ``lxc.*`` lines replaced by ``want``'s:
    the first one's place keeps them (else the end of the main section, where ``write_pct_config``
    puts them); ``lxc.environment.runtime`` (``env``), every other line and the snapshot and
    pending sections are kept byte for byte."""
    lines = raw.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if _SECTION.match(line)), len(lines))
    main, rest = lines[:end], lines[end:]
    kept, at = [], None
    for line in main:
        found = _LINE.match(line.rstrip("\n"))
        if found and found.group(1) != "lxc.environment.runtime":
            at = len(kept) if at is None else at
            continue
        kept.append(line)
    if at is None:
        # After the last non-blank line of the main section (a blank line before a section stays).
        at = len(kept)
        while at and not kept[at - 1].strip():
            at -= 1
        if at and not kept[at - 1].endswith("\n"):
            kept[at - 1] += "\n"
    new = [f"{line}\n" for line in want.splitlines()]
    return "".join([*kept[:at], *new, *kept[at:], *rest])


def _locked(raw: str) -> str | None:
    """The main section's ``lock`` value, or None."""
    for line in raw.splitlines():
        if _SECTION.match(line):
            break
        found = _LOCKED.match(line)
        if found:
            return found.group(1)
    return None


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # noqa: S324 - PVE's own digest, not a safeguard


def _flock(path: str, timeout: float, sleep=time.sleep) -> int:
    """An exclusive flock on ``path`` (created as ``lock_file_full``'s ``>>$filename`` does),
    waited for up to ``timeout`` seconds. Raises Refused naming the lock when it is not had."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                os.close(fd)
                raise Refused(
                    f"can't lock file '{path}' - got timeout: another writer holds the container's config "
                    "lock (pve-common PVE/Tools.pm lock_file_full); nothing was written. Plan again."
                ) from None
            sleep(0.1)


def write_lines(
    pve_dir: str,
    lock_dir: str,
    node: str,
    vmid: int,
    want: str,
    digest: str,
    timeout: float = LOCK_TIMEOUT,
) -> None:
    """Write ``want`` (``render``'s text) as the raw lines of container ``vmid`` on ``node``
    (module docstring), guarded by ``digest`` (the ``GET …/config`` digest the write was judged
    on). Raises Refused when the lock is not had, the file changed since (its SHA-1 is not
    ``digest``) or the config is locked (nothing written), Uncertain when the file cannot be read
    back as written (it may or may not hold the lines)."""
    path = config_path(pve_dir, node, vmid)
    fd = _flock(lock_path(lock_dir, vmid), timeout)
    try:
        try:
            with open(path, encoding="utf-8") as handle:
                raw = handle.read()
        except OSError as exc:
            raise Refused(f"{path}: cannot be read ({exc.strerror}); nothing was written.") from None
        if _sha1(raw) != digest:
            raise Refused(
                f"CT {vmid}: {path} changed since it was judged (its digest is not the one read); nothing "
                "was written. Plan again."
            )
        lock = _locked(raw)
        if lock:
            raise Refused(
                f"CT {vmid} is locked ({lock}) (pve-guest-common AbstractConfig.pm check_lock); nothing was "
                "written."
            )
        new = replace_lines(raw, want)
        temp = f"{path}.tmp.{os.getpid()}"
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(new)
            os.replace(temp, path)
        except OSError as exc:
            raise Refused(f"{path}: cannot be written ({exc.strerror}); nothing was changed.") from None
        try:
            with open(path, encoding="utf-8") as handle:
                back = handle.read()
        except OSError as exc:
            raise Uncertain(f"{path}: written, but cannot be read back ({exc.strerror}).") from None
        if back != new:
            raise Uncertain(
                f"{path}: written, but reads back otherwise; read the container before planning again."
            )
    finally:
        os.close(fd)


def live_text(config: Mapping[str, object] | Sequence[object] | None) -> str:
    """The raw lines of a live config (``GET …/config``'s ``lxc``) as ``render``'s text."""
    if isinstance(config, Mapping):
        return render(config.get(KEY))
    return render(config)
