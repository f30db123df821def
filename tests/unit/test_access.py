"""Pure rules of the access families and the privilege table, each beside its pve-access-control,
qemu-server or pve-container source."""

from __future__ import annotations

import pytest

from salt_proxmox.access import privileges, realm, token, user
from salt_proxmox.errors import DeclarationError


def _privs(needs, path=None):
    return {priv for need in needs if path is None or need.path == path for priv in need.privileges}


def test_cloud_init_keys_pass_with_cloudinit_or_network_and_a_cloudinit_drive_needs_both():
    # qemu-server API2/Qemu.pm $check_vm_modify_config_perm: $cloudinitoptions / ipconfigN take
    # ['VM.Config.Cloudinit', 'VM.Config.Network'] with any=1; a cloud-init drive is a CD-ROM
    # (VM.Config.CDROM) whose content is cloud-init (VM.Config.Cloudinit).
    (ciuser,) = privileges.guest_needs("qemu", 150, {"ciuser": "debian"}, "update")
    assert ciuser.any and ciuser.missing({"VM.Config.Network"}) == ()
    assert ciuser.missing(set()) == ("VM.Config.Cloudinit", "VM.Config.Network")
    (drive,) = privileges.guest_needs("qemu", 150, {"ide2": "local-lvm:cloudinit,media=cdrom"}, "update")
    assert not drive.any and set(drive.privileges) == {"VM.Config.CDROM", "VM.Config.Cloudinit"}
    assert drive.missing({"VM.Config.Cloudinit"}) == ("VM.Config.CDROM",)


def test_a_vm_create_needs_its_keys_classes_a_new_disks_storage_and_sdn_use_on_its_bridge():
    config = {"memory": "2048", "scsi0": "local-lvm:8", "net0": "virtio,bridge=vmbr0", "startup": "order=1"}
    needs = privileges.guest_needs("qemu", 150, config, "create", pool="prod")
    # create_vm calls $check_vm_modify_config_perm (which skips drives) and $check_storage_access, never
    # update_vm_api's $check_drive_perms: a drive sent with the create needs no VM.Config.Disk.
    assert _privs(needs, "/vms/150") == {
        "VM.Allocate", "VM.Config.Memory", "VM.Config.Network", "VM.Config.Options"
    }  # fmt: skip
    update = privileges.guest_needs("qemu", 150, {"scsi0": "local-lvm:8"}, "update")
    assert _privs(update, "/vms/150") == {"VM.Config.Disk"}
    assert _privs(needs, "/storage/local-lvm") == {"Datastore.AllocateSpace"}
    assert _privs(needs, "/sdn/zones/localnetwork/vmbr0") == {"SDN.Use"}  # check_vnet_access
    assert _privs(needs, "/") == {"Sys.Modify"}  # startup "changes host behaviour"
    assert _privs(needs, "/pool/prod") == {"Pool.Allocate"}
    # The plan's own check leaves out what the family checks itself (startup, SDN.Use with tags).
    plain = privileges.guest_needs("qemu", 150, {"startup": "order=1", "net0": "virtio,bridge=v"}, "update",
                                   dedicated=False)  # fmt: skip
    assert "/" not in {n.path for n in plain} and not [n for n in plain if n.path.startswith("/sdn")]


def test_container_keys_follow_check_ct_modify_config_perm():
    needs = privileges.guest_needs(
        "lxc", 151, {"swap": "512", "hostname": "db", "mp0": "local-zfs:10,mp=/srv", "onboot": "1",
                     "features": "nesting=1"}, "update",
    )  # fmt: skip
    assert _privs(needs, "/vms/151") == {
        "VM.Config.Memory", "VM.Config.Network", "VM.Config.Disk", "VM.Config.Options", "VM.Allocate"
    }  # fmt: skip
    assert _privs(needs, "/storage/local-zfs") == {"Datastore.AllocateSpace"}


def test_least_roles_take_an_any_needs_first_privilege():
    needs = [
        privileges.Need("read", "/storage/x", ("Datastore.Audit", "Datastore.AllocateSpace"), "list", True),
        privileges.Need("provision", "/storage", ("Datastore.Allocate",), "create"),
    ]
    found = privileges.least_roles(needs)
    assert found["roles"] == {
        "SaltProxmoxProvision": {"privs": ["Datastore.Allocate"]},
        "SaltProxmoxRead": {"privs": ["Datastore.Audit"]},
    }
    assert {entry["path"] for entry in found["acls"].values()} == {"/storage/x", "/storage"}


def test_root_at_pam_a_bad_userid_and_a_password_outside_pve_are_refused_by_name():
    # Auth/Plugin.pm verify_username: 3 to 64 characters, name@realm.
    with pytest.raises(DeclarationError, match="root@pam"):
        user.identify("s", "t", name="root@pam")
    with pytest.raises(DeclarationError, match="does not look like a valid user name"):
        user.identify("s", "t", name="nobody")
    with pytest.raises(DeclarationError, match="realm pam") as caught:
        user.declare("s", "t", name="ops@pam", password="long-enough-1")
    assert "long-enough-1" not in str(caught.value)
    with pytest.raises(DeclarationError, match="8 to 64") as caught:
        user.declare("s", "t", name="ci@pve", password="short")
    assert "short" not in str(caught.value)


def test_a_users_groups_are_a_set():
    decl = user.declare("s", "t", name="ci@pve", groups=["ops", "automation", "ops"])
    assert decl.values["groups"] == "automation,ops"
    assert (
        user.parse({"enable": 1, "groups": ["ops", "automation"], "tokens": {}}, decl)["groups"]
        == "automation,ops"
    )


def test_a_token_is_read_from_its_users_tokens_and_absent_when_not_listed():
    # User.pm read_user: $extract_user_data($data, 1) holds tokens {tokenid: {privsep, expire, comment}}.
    decl = token.declare("s", "t", name="ci@pve!deploy", store="secret/data/ci")
    assert token.parse({"tokens": {"deploy": {"privsep": 0, "expire": 0}}}, decl) == {
        "privsep": 0, "expire": 0, "comment": ""
    }  # fmt: skip
    assert token.parse({"tokens": {"other": {"privsep": 1}}}, decl) is None
    with pytest.raises(DeclarationError, match="store"):
        token.declare("s", "t", name="ci@pve!deploy", store="/leading")


def test_a_rotation_is_asked_by_a_new_serial_or_store():
    decl = token.declare("s", "t", name="ci@pve!deploy", store="a/b", secret_serial=2)
    live = {"privsep": 1, "expire": 0, "comment": "", "store": "a/b", "secret_serial": 1}
    assert token.update(decl, live).form == {"regenerate": "1"}
    assert token.update(decl, {**live, "secret_serial": 2}) is None
    assert token.update(decl, {**live, "secret_serial": 2, "store": "a/c"}).form == {"regenerate": "1"}


def test_realm_types_options_and_builtin_realms():
    # Auth/LDAP.pm options(): server1, base_dn, user_attr required; OpenId.pm: issuer-url, client-id.
    with pytest.raises(DeclarationError, match="user_attr: a ldap realm requires it"):
        realm.declare("s", "t", name="corp", type="ldap", server1="l", base_dn="d")
    with pytest.raises(DeclarationError, match="not an option of a openid realm"):
        realm.declare(
            "s", "t", name="sso", type="openid", **{"issuer-url": "u", "client-id": "c"}, base_dn="d"
        )
    with pytest.raises(DeclarationError, match="built-in realm"):
        realm.identify("s", "t", name="pve")
    with pytest.raises(DeclarationError, match="bind_password: a openid realm takes no"):
        realm.declare(
            "s", "t", name="sso", type="openid", bind_password="x", **{"issuer-url": "u", "client-id": "c"}
        )
    decl = realm.declare("s", "t", name="corp", type="ldap", server1="l", base_dn="d", user_attr="uid",
                         bind_password="b1nd", bind_password_serial=1)  # fmt: skip
    assert decl.secrets == {"password": "b1nd"} and "b1nd" not in repr(decl)
    assert realm.create(decl).form["password"] == "b1nd"
    live = {**decl.values, "bind_password_serial": 1}
    assert realm.update(decl, live) is None, "the same serial: nothing to write"
    assert realm.update(decl, {**live, "bind_password_serial": 0}).form == {"password": "b1nd"}


def test_a_realms_client_key_pve_returns_is_never_kept():
    decl = realm.declare("s", "t", name="sso", type="openid", **{"issuer-url": "u", "client-id": "c"})
    live = realm.parse({"type": "openid", "issuer-url": "u", "client-id": "c", "client-key": "k3y"}, decl)
    assert "client-key" not in live and "k3y" not in repr(live)


@pytest.mark.parametrize(
    ("declared", "spelled"),
    [
        # Domains.pm $map_sync_default_options: full/purge become remove-vanished and are dropped.
        ("full=1,purge=1,scope=both", "remove-vanished=entry;properties;acl,scope=both"),
        ("enable-new=yes,scope=users", "enable-new=1,scope=users"),
        ("scope=users,remove-vanished=acl;entry,purge=1", "remove-vanished=acl;entry,scope=users"),
    ],
)
def test_sync_defaults_options_in_pves_spelling(declared, spelled):
    assert realm.sync_options(declared) == spelled
