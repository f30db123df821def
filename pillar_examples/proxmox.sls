# A small estate: two new containers and one that already runs on the cluster.
# The create secrets (web's root password) live in secrets.sls, a pillar file of their own.
# Targets and OpenBao live in the minion config here (see README); they may live in pillar too.
proxmox:
  lxc:
    web:
      vmid: 150
      node: pve1
      ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
      unprivileged: true
      hostname: web
      cores: 2
      memory: 1024          # MiB
      swap: 512             # MiB
      rootfs: local-zfs:8   # a new 8 GiB volume on local-zfs
      mp0: local-zfs:20,mp=/srv/www,backup=1
      net0: name=eth0,bridge=vmbr0,ip=dhcp
      features: nesting=1
      tags: web;prod
      onboot: true
      startup: order=2,up=30
      description: Public web front end
      status: running       # started by its own start task after the create; checked on every run
      pool: prod            # created in pool prod (declared below); a later change moves it
      # password: from secrets.sls, sent with the create only, never shown or kept
      backup: required      # a plan refuses it while no enabled backup job covers it (see backup_jobs)
      snapshots:            # one proxmox_snapshot state each, after the container; never rolled back by a state
        - snapname: first-boot
          description: As created by salt-proxmox

    db:
      vmid: 151
      node: pve2
      ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
      unprivileged: true
      hostname: db
      cores: 4
      memory: 4096
      rootfs: local-lvm:16
      mp0: local-lvm:50,mp=/var/lib/postgresql,backup=1
      net0: name=eth0,bridge=vmbr0,ip=10.0.0.21/24,gw=10.0.0.1
      nameserver: 10.0.0.53
      searchdomain: lab.example
      features: nesting=1
      tags: db;prod
      onboot: true
      startup: order=3,up=60
      description: PostgreSQL for the web tier

    # Already running on pve1, built by hand: taken over as it is, never recreated.
    dns:
      vmid: 120
      node: pve1
      adopt: true
      unprivileged: true
      hostname: dns1
      cores: 1
      memory: 512
      rootfs: local-zfs:4
      net0: name=eth0,bridge=vmbr0,ip=10.0.0.53/24,gw=10.0.0.1
      features: nesting=1
      tags: infra;dns
      onboot: true
      startup: order=1
      description: Resolver for the lab
      # It runs: a change PVE keeps pending until a restart (rootfs, nameserver, features, ...)
      # reboots it once written, so that it runs as declared. Without this, nothing is rebooted.
      reboot_for_pending: true

  # QEMU VMs. Keys are spelled as `qm` and the API spell them; sizes in GiB (storage:GiB allocates a
  # new disk; a larger N on an existing disk grows it in place; a smaller one is refused).
  qemu:
    # Built from scratch: an empty disk, the installer ISO in the CD-ROM, and cloud-init for the
    # first boot. The cloud-init password comes from secrets.sls; it is written once and never
    # shown: bump cipassword_serial to write a new one.
    app:
      vmid: 210
      node: pve1
      ostype: l26
      memory: 2048            # MiB
      cores: 2
      cpu: x86-64-v2-AES
      scsihw: virtio-scsi-single
      scsi0: local-lvm:32,iothread=1,discard=on          # a new 32 GiB disk on local-lvm
      ide2: local:iso/debian-13.2.0-amd64-netinst.iso,media=cdrom
      ide0: local-lvm:cloudinit                          # the cloud-init drive
      net0: virtio,bridge=vmbr0                          # PVE draws the MAC once; it is kept
      agent: 1
      ciuser: ops
      sshkeys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHdvtR5UMJ8MnmbhPh6F2eiyUqNcJkpiJOnbL3Dz9sYI ops@lab
      ipconfig0: ip=10.0.0.30/24,gw=10.0.0.1
      nameserver: 10.0.0.53
      searchdomain: lab.example
      cipassword_serial: 1
      tags: app;prod
      onboot: true
      description: Application server, installed from the ISO
      status: running         # started after the create: it boots the installer ISO

    # A linked clone of the cloud-init template 9000 (debian-13-cloud), then configured in the same
    # apply: more memory, its disk grown from the template's 3 GiB to 10 GiB, its own address.
    ci:
      vmid: 211
      node: pve1
      clone: 9000
      memory: 4096
      cores: 4
      scsi0: local-lvm:10,discard=on,iothread=1          # the template's disk, grown to 10 GiB
      net0: virtio,bridge=vmbr0
      ciuser: ci
      sshkeys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHdvtR5UMJ8MnmbhPh6F2eiyUqNcJkpiJOnbL3Dz9sYI ops@lab
      ipconfig0: ip=10.0.0.31/24,gw=10.0.0.1
      nameserver: 10.0.0.53
      tags: ci
      onboot: true
      description: CI runner, cloned from the cloud-init template

  # Cluster firewall aliases (Datacenter → Firewall → Alias). Names compare case-insensitively;
  # a /32 (or /128) is PVE's bare address. To rename one, key it by the new name and add
  # rename_from: <old name> — the new alias is created first, the old one deleted after.
  firewall_aliases:
    lab_net:
      cidr: 10.0.0.0/24
      comment: Lab network (vmbr0)
    dns1:
      cidr: 10.0.0.53/32
      comment: Resolver (CT 120)
    db:
      cidr: 10.0.0.21
      comment: PostgreSQL (CT 151)

  # Resource pools; members are not managed here.
  pools:
    prod:
      comment: Production guests
    lab:
      comment: Experiments, may be wiped

  # Storage definitions (storage.cfg, cluster-wide): type is identity; server, export and path are
  # fixed once created; content and nodes are sets; the data is never removed with a definition.
  storage:
    backups:
      type: nfs
      server: 192.0.2.20
      export: /export/pve
      content: backup,iso
      prune-backups: keep-last=3

  # Backup jobs (Datacenter → Backup), cluster-wide. The schedule is a calendar event compared by
  # meaning ('02:00' and '2:00' are one); every plan notes the declared guests no enabled job covers.
  backup_jobs:
    nightly:
      schedule: '02:00'
      storage: backups
      vmid: [120, 150, 151, 210, 211]   # or pool: <poolid>, or all: true with exclude: [...]
      mode: snapshot
      compress: zstd
      prune-backups: keep-daily=7,keep-weekly=4
      comment: Every guest of this estate, nightly

  # Node networks, per node: interfaces are written with PVE's keys and only staged
  # (/etc/network/interfaces.new); `apply: true` reloads the node afterwards, only while the cluster
  # is quorate with every node online. Nodes are applied one after the other.
  networks:
    pve1:
      apply: true
      interfaces:
        vmbr1:                  # a VLAN-aware bridge for guest VLANs, on the spare NIC
          type: bridge
          bridge_ports: eno2
          bridge_vlan_aware: true
          bridge_vids: 2-4094
          autostart: true
          comments: Guest VLANs
    pve2:
      apply: true               # nothing declared here: apply what is already staged (the plan shows it)

  # SDN: zones, then vnets, then subnets land in the pending SDN configuration; `apply: true`
  # commits it (Datacenter → SDN → Apply) under PVE's SDN lock, with the same health checks.
  sdn:
    apply: true
    zones:
      lab:
        type: vlan
        bridge: vmbr0
    vnets:
      labnet:
        zone: lab
        tag: 20
        alias: Lab guests

  # The two roles salt-proxmox's own API tokens hold (docs/design.md §4): `read` for every plan, `provision`
  # for writes — containers, VMs, and the firewall aliases, pools, roles and ACL entries declared here.
  roles:
    SaltProxmoxRead:
      privs: [VM.Audit, Datastore.Audit, Sys.Audit, Pool.Audit, SDN.Audit]   # SDN.Audit: bridges, zones, vnets
    SaltProxmoxProvision:
      privs:
        - VM.Allocate
        - VM.Audit
        - VM.Config.CPU
        - VM.Config.Disk
        - VM.Config.HWType
        - VM.Config.Memory
        - VM.Config.Network
        - VM.Config.Options
        - VM.PowerMgmt
        - VM.Config.CDROM      # VMs: a CD-ROM drive
        - VM.Config.Cloudinit  # VMs: cloud-init keys
        - VM.Clone             # VMs: cloning the template
        - Datastore.Allocate   # storage definitions (pve-storage API2/Storage/Config.pm)
        - Datastore.AllocateSpace
        - Datastore.Audit
        - SDN.Use
        - Sys.Audit
        - Sys.Modify           # cluster firewall aliases, custom roles, node interfaces and reloads
        - Pool.Allocate        # pools
        - Permissions.Modify   # ACL entries
        - VM.Backup            # backup jobs of a pool (pve-manager API2/Backup.pm)
        - VM.Snapshot          # snapshots (proxmox_snapshot, proxmox.snapshot_create/delete)
        - VM.Snapshot.Rollback # proxmox.snapshot_rollback
        - SDN.Allocate         # SDN zones, vnets, subnets, the SDN lock and apply

  # ACL entries: one role for one user, group or API token on one path.
  acls:
    salt-read-on-root:
      path: /
      role: SaltProxmoxRead
      token: salt-read@pve!plan
    salt-provision-on-root:
      path: /
      role: SaltProxmoxProvision
      token: salt-provision@pve!apply

openbao:
  # ACL policies, assembled from ordered fragments (inline HCL or salt:// files) and compared by
  # the sha256 of the text. This one already exists (whoever set OpenBao up wrote it), so it is
  # adopted; from then on it is the text below.
  policies:
    salt-proxmox-creds:
      adopt: true
      fragments:
        - salt://proxmox/files/openbao/proxmox-creds.hcl
        - |
          # ...and keeps the salt-proxmox-* policies it declares in step (openbao:policies).
          # Whoever may write a policy may grant itself anything: keep this glob narrow.
          path "sys/policy/salt-proxmox-*" {
            capabilities = ["create", "read", "update", "delete"]
          }
