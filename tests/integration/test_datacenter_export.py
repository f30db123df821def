"""``proxmox.export`` of a datacenter made by hand: one of each datacenter object, created through the
fake cluster's HTTP API as ``root@pam`` (a login ticket and its CSRF token, as the GUI sends them), never
through this product. The export holds no secret and says where each goes; its pillar, with the secrets
supplied from a secrets pillar the way each family reads them (``secrets_pillar``: the entry's own pillar
path), rendered by the formula and planned, changes nothing but the ownership rows and refuses nothing;
applied, it writes nothing to PVE, and the next plan is clean.

The objects, each with values other than PVE's defaults where PVE has them: ``datacenter.cfg``
(pve-manager ``PVE/API2/Cluster.pm`` ``set_options``), an smtp endpoint with a password and a matcher
sending to it (``PVE/API2/Cluster/Notifications.pm``), an InfluxDB server with a token
(``PVE/API2/Cluster/MetricServer.pm``), a replication job of a guest on zfspool storage to the other node
(``PVE/API2/ReplicationConfig.pm``), a PCI, a USB and a directory mapping with an entry for each node
(``PVE/API2/Cluster/Mapping/{PCI,USB,Dir}.pm``), a DNS ACME plugin with its data
(``PVE/API2/ACMEPlugin.pm``), and an EVPN controller (applied), a NetBox IPAM with a token and a
PowerDNS server with a key (pve-network ``PVE/API2/Network/SDN/{Controllers,Ipams,Dns}.pm``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import requests

from tests.support.cluster import DNS1_VMID
from tests.support.guests import requests_since, static_targets, writes
from tests.support.saltworld import SaltWorld, chunks_of

#: The families of the datacenter (salt_proxmox/registry.py), exported together.
FAMILIES = "cluster_options,notification,metric_server,replication,mapping,acme,sdn"
SMTP_PASSWORD = "smtp-password-by-hand-61f0"
INFLUX_TOKEN = "influx-token-by-hand-3c2d"
ACME_TOKEN = "cf-token-by-hand-9e8d"
NETBOX_TOKEN = "netbox-token-by-hand-7a6b"
PDNS_KEY = "pdns-key-by-hand-5e4f"
PROXY_PASSWORD = "proxy-password-by-hand-2b1a"
PROXY = f"http://pve:{PROXY_PASSWORD}@proxy.example.org:3128"
SECRETS = (PROXY_PASSWORD, SMTP_PASSWORD, INFLUX_TOKEN, ACME_TOKEN, NETBOX_TOKEN, PDNS_KEY)
#: A server certificate's SHA-256 fingerprint (the IPAM's and DNS server's ``fingerprint``).
FINGERPRINT = ":".join(["ab"] * 32)
#: The ACME plugin's data as the GUI sends it: KEY=value lines, base64url (proxmox-acme ``Challenge.pm``
#: ``encode_value``; pve-manager ``PVE/CLI/pvenode.pm`` ``param_mapping``).
ACME_DATA = {"CF_Token": ACME_TOKEN, "CF_Account_ID": "lab-account"}


class Gui:
    """A root@pam session on the fake's API: ``POST /access/ticket``, then the ticket as the
    ``PVEAuthCookie`` and the CSRF token on every write (pve-access-control ``PVE/API2/AccessControl.pm``
    ``create_ticket``)."""

    def __init__(self, served) -> None:
        self.base = f"{served.url}/api2/json"
        self.session = requests.Session()
        self.verify = served.cafile
        login = self.session.post(
            f"{self.base}/access/ticket",
            data={"username": served.pve.user, "password": served.pve.password},
            verify=self.verify,
            timeout=10,
        )
        assert login.status_code == 200, login.text
        ticket = login.json()["data"]
        self.session.cookies.set("PVEAuthCookie", ticket["ticket"])
        self.session.headers["CSRFPreventionToken"] = ticket["CSRFPreventionToken"]

    def __call__(self, verb: str, path: str, /, **form: object) -> object:
        answer = self.session.request(
            verb, f"{self.base}{path}", data=form or None, verify=self.verify, timeout=10
        )
        assert answer.status_code == 200, f"{verb} {path}: {answer.status_code} {answer.text}"
        return answer.json().get("data")


def make_by_hand(gui: Gui) -> None:
    """One of each datacenter object, as an operator makes it in the GUI."""
    gui(
        "PUT",
        "/cluster/options",
        keyboard="de",
        language="de",
        console="xtermjs",
        max_workers=8,
        mac_prefix="02:a1:b2",
        migration="type=insecure,network=10.0.0.0/24",
        replication="secure,network=10.0.1.0/24",
        crs="ha=static,ha-rebalance-on-start=1",
        ha="shutdown_policy=migrate",
        bwlimit="migration=102400,restore=51200.5",
        description="The lab's datacenter\nsecond line",
        http_proxy=PROXY,
        **{
            "tag-style": "shape=dense,ordering=config,case-sensitive=1,color-map=prod:ff0000",
            "next-id": "lower=1000,upper=9999",
            "registered-tags": "prod;lab",
            "user-tag-access": "user-allow=list,user-allow-list=prod;lab",
            "email_from": "pve@example.org",
            "consent-text": "Authorised use only",
        },
    )
    gui(
        "POST",
        "/cluster/notifications/endpoints/smtp",
        name="ops-mail",
        server="mail.example.org",
        port=2525,
        mode="starttls",
        username="pve",
        password=SMTP_PASSWORD,
        mailto=["ops@example.org", "oncall@example.org"],
        author="Lab PVE",
        comment="to the on-call rota",
        **{"from-address": "pve@example.org", "mailto-user": "root@pam"},
    )
    gui(
        "POST",
        "/cluster/notifications/matchers",
        name="backups-to-ops",
        target=["ops-mail", "mail-to-root"],
        mode="any",
        comment="failed backups",
        **{
            "match-severity": "warning,error",
            "match-field": ["exact:type=vzdump", "regex:hostname=^pve"],
            "match-calendar": "mon..fri 8-17",
            "invert-match": 1,
        },
    )
    gui(
        "POST",
        "/cluster/metrics/server/influx",
        type="influxdb",
        server="influx.example.org",
        port=8086,
        influxdbproto="https",
        organization="lab",
        bucket="pve",
        token=INFLUX_TOKEN,
        mtu=1450,
        timeout=3,
        **{"max-body-size": 10000000, "api-path-prefix": "/influx", "verify-certificate": 0},
    )
    gui(
        "POST",
        "/cluster/replication",
        id=f"{DNS1_VMID}-0",
        type="local",
        target="pve2",
        schedule="*/30",
        rate=7.5,
        comment="dns1 to pve2",
        disable=1,
    )
    gui(
        "POST",
        "/cluster/mapping/pci",
        id="gpu",
        description="the lab's GPU",
        mdev=1,
        map=[
            "node=pve1,path=0000:01:00.0,id=10de:1b80,iommugroup=1,subsystem-id=1458:3702",
            "node=pve2,path=0000:02:00.0,id=10de:1b80,iommugroup=3",
        ],
        **{"live-migration-capable": 1},
    )
    gui(
        "POST",
        "/cluster/mapping/usb",
        id="token-key",
        description="the signing key",
        map=["node=pve1,id=1050:0407", "node=pve2,id=1050:0407,path=1-2"],
    )
    gui(
        "POST",
        "/cluster/mapping/dir",
        id="share",
        description="shared data",
        map=["node=pve1,path=/srv/share", "node=pve2,path=/mnt/share"],
    )
    data = "".join(f"{key}={value}\n" for key, value in ACME_DATA.items())
    gui(
        "POST",
        "/cluster/acme/plugins",
        id="lab-dns",
        type="dns",
        api="cf",
        data=base64.urlsafe_b64encode(data.encode()).decode(),
        nodes="pve1,pve2",
        disable=1,
        **{"validation-delay": 60},
    )
    gui(
        "POST",
        "/cluster/sdn/controllers",
        controller="evpnctl",
        type="evpn",
        asn=65000,
        peers="10.0.0.1,10.0.0.2",
    )
    gui("PUT", "/cluster/sdn")  # applied, as the GUI's SDN "Apply" does
    gui(
        "POST",
        "/cluster/sdn/ipams",
        ipam="netbox",
        type="netbox",
        url="https://netbox.example.org/api",
        token=NETBOX_TOKEN,
        fingerprint=FINGERPRINT,
    )
    gui(
        "POST",
        "/cluster/sdn/dns",
        dns="pdns",
        type="powerdns",
        url="https://pdns.example.org/api/v1/servers/localhost",
        key=PDNS_KEY,
        ttl=600,
        reversemaskv6=64,
        fingerprint=FINGERPRINT,
    )


#: Where each secret goes: the exported entry's own pillar path, the path the formula gives its state as
#: ``secrets_pillar`` (formula/proxmox/init.sls), and the value, as a secrets pillar file holds it.
SUPPLIED = {
    ("cluster_options", "cluster"): {"http_proxy": PROXY},
    ("notifications", "endpoints", "ops-mail"): {"password": SMTP_PASSWORD},
    ("metric_servers", "influx"): {"token": INFLUX_TOKEN},
    ("acme", "plugins", "lab-dns"): {"data": ACME_DATA},
    ("sdn", "ipams", "netbox"): {"token": NETBOX_TOKEN},
    ("sdn", "dns", "pdns"): {"key": PDNS_KEY},
}


def _with_secrets(pillar: dict) -> dict:
    """``pillar`` merged with the secrets pillar (``SUPPLIED``), as Salt merges two pillar files."""
    merged = json.loads(json.dumps(pillar))
    for path, secrets in SUPPLIED.items():
        entry = merged["proxmox"]
        for part in path:
            entry = entry[part]
        entry.update(secrets)
    return merged


def _shown(returns: list[dict]) -> str:
    return json.dumps([{k: r.get(k) for k in ("__id__", "result", "changes", "comment")} for r in returns])


@pytest.fixture
def world(fresh_cluster, tmp_path: Path) -> SaltWorld:
    return SaltWorld(
        {"proxmox": {"targets": static_targets(fresh_cluster)}}, {}, tmp_path / "salt_proxmox_owned.json"
    )


#: The state of each object made by hand (``make_by_hand``), as the formula names it.
MADE = {
    "proxmox-cluster-options-cluster",
    "proxmox-notification-endpoint-ops-mail",
    "proxmox-notification-matcher-backups-to-ops",
    "proxmox-metric-server-influx",
    f"proxmox-replication-{DNS1_VMID}-0",
    "proxmox-mapping-pci-gpu",
    "proxmox-mapping-usb-token-key",
    "proxmox-mapping-dir-share",
    "proxmox-acme-plugin-lab-dns",
    "proxmox-sdn-controller-evpnctl",
    "proxmox-sdn-ipam-netbox",
    "proxmox-sdn-dns-pdns",
}


def _plan_apply_replan(served, world: SaltWorld, pillar: dict) -> list[dict]:
    """Plan ``pillar`` as the formula renders it, apply it, plan again: the first plan takes each object
    over (an ownership row, no other change, no refusal), nothing is written to PVE, the second plan is
    clean. Returns the first plan."""
    world.pillar.update(pillar)  # the secrets pillar merged in: each state reads its own from there
    lows = chunks_of(world.formula(pillar))
    start = len(served.pve.requests)
    plan = world.run(lows, test=True)
    assert all(r["result"] in (None, True) for r in plan), _shown(plan)
    assert all(set(r["changes"]) <= {"ownership"} for r in plan), _shown(plan)
    applied = world.run(lows, test=False)
    assert all(r["result"] is True for r in applied), _shown(applied)
    again = world.run(lows, test=True)
    assert all(r["result"] is True and not r["changes"] for r in again), _shown(again)
    assert writes(requests_since(served, start)) == [], "adopting writes nothing to PVE"
    return plan


def test_a_hand_made_datacenter_exports_and_plans_clean_with_adopt(fresh_cluster, world, tmp_path, caplog):
    make_by_hand(Gui(fresh_cluster))
    sls = tmp_path / "proxmox_export.sls"
    exported = world.salt["proxmox.export"](family=FAMILIES, path=str(sls))
    text = sls.read_text()
    for secret in SECRETS:
        assert secret not in json.dumps(exported) + text + caplog.text, "never exported nor logged"
    # The file says where each secret goes: the pillar path its state reads it from (secrets_pillar).
    notes = [line for line in text.splitlines() if line.startswith("# NOTE: ")]
    for path, secrets in SUPPLIED.items():
        for key in secrets:
            where = ":".join(("proxmox", *path, key))
            assert any(f" at {where} in a secrets pillar file" in note for note in notes), (where, notes)
    assert not [note for note in notes if "not exported, " in note], notes
    # Values other than PVE's defaults come back in the product's spellings.
    options = exported["proxmox"]["cluster_options"]["cluster"]
    assert options["tag-style"] == "case-sensitive=1,color-map=prod:ff0000,ordering=config,shape=dense"
    assert options["migration"] == "network=10.0.0.0/24,type=insecure" and "http_proxy" not in options
    matcher = exported["proxmox"]["notifications"]["matchers"]["backups-to-ops"]
    assert matcher["targets"] == ["mail-to-root", "ops-mail"] and matcher["invert-match"] == 1
    assert exported["proxmox"]["replication"][f"{DNS1_VMID}-0"]["target_node"] == "pve2"

    plan = _plan_apply_replan(fresh_cluster, world, _with_secrets(exported))
    assert {r["__id__"] for r in plan if r["changes"]} >= MADE, _shown(plan)
    pve = fresh_cluster.pve
    assert pve.notification_secrets["ops-mail"] == {"password": SMTP_PASSWORD}, "never touched"
    assert pve.metric_tokens["influx"] == INFLUX_TOKEN and pve.sdn_ipams["netbox"]["token"] == NETBOX_TOKEN


GOTIFY_TOKEN = "gotify-token-by-hand-8c7d"
HOOK_SECRET = base64.b64encode(b"hook-secret-by-hand-4d3c").decode()


def make_defaults_by_hand(gui: Gui) -> None:
    """Objects whose values are PVE's own defaults, written out as an operator may write them."""
    gui(
        "PUT",
        "/cluster/options",
        keyboard="en-us",
        console="applet",
        fencing="watchdog",
        mac_prefix="bc:24:11",
        migration="type=secure",
        crs="ha=basic",
        **{"tag-style": "shape=circle,ordering=alphabetical,case-sensitive=0"},
    )
    gui(
        "POST",
        "/cluster/notifications/endpoints/sendmail",
        name="plain-mail",
        mailto="ops@example.org",
        disable=0,
    )
    gui(
        "POST",
        "/cluster/notifications/endpoints/smtp",
        name="tls-mail",
        server="mail.example.org",
        mode="tls",
        port=465,
        mailto="ops@example.org",
        **{"from-address": "pve@example.org"},
    )
    gui(
        "POST",
        "/cluster/notifications/endpoints/gotify",
        name="pager",
        server="https://gotify.example.org",
        token=GOTIFY_TOKEN,
    )
    gui(
        "POST",
        "/cluster/notifications/endpoints/webhook",
        name="hook",
        url="https://hooks.example.org/pve",
        method="post",
        header=f"name=Content-Type,value={base64.b64encode(b'application/json').decode()}",
        secret=f"name=token,value={HOOK_SECRET}",
    )
    gui(
        "POST",
        "/cluster/notifications/matchers",
        name="everything",
        target=["plain-mail", "tls-mail", "pager", "hook"],
        mode="all",
        disable=0,
        **{"invert-match": 0},
    )
    gui(
        "POST",
        "/cluster/metrics/server/carbon",
        type="graphite",
        server="192.0.2.40",
        port=2003,
        proto="udp",
        path="proxmox",
        mtu=1500,
        timeout=1,
        disable=0,
    )
    gui(
        "POST",
        "/cluster/metrics/server/influx-udp",
        type="influxdb",
        server="192.0.2.41",
        port=8089,
        influxdbproto="udp",
        mtu=1500,
    )
    gui(
        "POST",
        "/cluster/replication",
        id=f"{DNS1_VMID}-1",
        type="local",
        target="pve2",
        schedule="*/15",
        disable=0,
    )
    gui(
        "POST",
        "/cluster/mapping/pci",
        id="nic",
        map=["node=pve1,path=0000:03:00.0,id=8086:1533", "node=pve2,path=0000:03:00.0,id=8086:1533"],
        mdev=0,
        **{"live-migration-capable": 0},
    )
    gui(
        "POST",
        "/cluster/acme/plugins",
        id="quiet-dns",
        type="dns",
        api="cf",
        disable=0,
        **{"validation-delay": 30},
    )
    gui(
        "POST",
        "/cluster/sdn/controllers",
        controller="bgp1",
        type="bgp",
        node="pve1",
        asn=65010,
        peers="10.1.0.2,10.1.0.1",
        ebgp=0,
    )
    gui("PUT", "/cluster/sdn")


def test_pve_s_defaults_written_out_by_hand_export_and_plan_clean(fresh_cluster, world):
    """A value PVE holds that is its own default (written out by hand: ``applet``, ``mode tls`` with port
    465, ``mdev=0``, ``validation-delay=30``, a matcher's ``mode all``) is exported as PVE reads it or left
    out, and either way plans as no drift; the gotify token and the webhook's secret are never exported."""
    make_defaults_by_hand(Gui(fresh_cluster))
    exported = world.salt["proxmox.export"](family=FAMILIES)
    assert GOTIFY_TOKEN not in json.dumps(exported) and HOOK_SECRET not in json.dumps(exported)
    assert exported["proxmox"]["cluster_options"]["cluster"] == {"keyboard": "en-us", "console": "html5",
                                                                 "adopt": True}  # fmt: skip
    pillar = json.loads(json.dumps(exported))
    pillar["proxmox"]["notifications"]["endpoints"]["pager"]["token"] = GOTIFY_TOKEN
    plan = _plan_apply_replan(fresh_cluster, world, pillar)
    assert {r["__id__"] for r in plan if r["changes"]} >= {
        "proxmox-notification-endpoint-plain-mail",
        "proxmox-notification-endpoint-tls-mail",
        "proxmox-notification-endpoint-pager",
        "proxmox-notification-endpoint-hook",
        "proxmox-notification-matcher-everything",
        "proxmox-metric-server-carbon",
        "proxmox-metric-server-influx-udp",
        f"proxmox-replication-{DNS1_VMID}-1",
        "proxmox-mapping-pci-nic",
        "proxmox-acme-plugin-quiet-dns",
        "proxmox-sdn-controller-bgp1",
    }, _shown(plan)
