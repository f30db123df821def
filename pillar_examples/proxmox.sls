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

    # Restored from last night's backup of web (CT 150) as a second front end, in place of an
    # ostemplate: the restore gives its NIC a new MAC (unique=1), so it never clashes with web; then the
    # keys below are written onto it. Restored once: on later runs restore: is noted as ignored.
    web2:
      vmid: 152
      node: pve2
      restore: local:backup/vzdump-lxc-150-2026_11_30-02_00_00.tar.zst
      rootfs: local-lvm:8   # the restore's new volume, on a storage that holds containers
      hostname: web2
      net0: name=eth0,bridge=vmbr0,ip=10.0.0.60/24,gw=10.0.0.1
      description: Second web front end, restored from web's backup

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

    # Built by hand on pve2 and stopped; wanted on pve1. Adopted as it is, then moved: a node other than
    # the live one is refused unless migrate: true. PVE's preflight (qemu-server migrate_vm_precondition)
    # judges it; stopped, it moves offline, its local-lvm disk copied. One move at a time: any other
    # change of it waits for the next run. The provision token needs VM.Migrate on /vms/220.
    build:
      vmid: 220
      node: pve1
      adopt: true
      migrate: true
      memory: 2048
      cores: 2

  # High availability (pve-ha-manager). An HA resource owns its guest's power state: declare
  # ha_state (PVE's state: started, stopped, disabled, ignored) here, never status: on the guest.
  ha_resources:
    ct:120:                   # dns: restarted by HA, relocated when its node fails
      ha_state: started
      max_restart: 2
      max_relocate: 1
      comment: Resolver for the lab
  # PVE 9: node-affinity and resource-affinity rules (PVE 8 has ha_groups instead, refused on 9).
  ha_rules:
    dns-on-pve1:
      type: node-affinity
      resources: [ct:120]
      nodes: [pve1:2, pve2:1]

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

  # The PVE firewall (Datacenter, Node and Guest → Firewall), run after the guests. Options are keyed by
  # scope (cluster, node/<node>, vm/<vmid>, ct/<vmid>); PVE's defaults are no drift. Nothing here
  # enables a firewall or sets a dropping policy, so this estate cannot lock its minion out.
  firewall:
    options:
      cluster:
        ebtables: 0                                    # PVE's default is 1
        log_ratelimit: enable=1,rate=2/second,burst=10 # PVE's default: 1/second, burst 5
    ipsets:
      admins:                                          # rules name it +admins
        scope: cluster                                 # or vm/<vmid>, ct/<vmid> (the guest's own set)
        comment: Admin hosts
        cidrs:
          - {cidr: 10.0.0.0/24, comment: Lab network}
          - {cidr: 10.0.0.128/25, nomatch: true}       # except the DHCP half
          - {cidr: 192.0.2.10/32, comment: Jump host}  # /32 is PVE's bare address
    groups:
      webgrp:                                          # rules use it with type: group, action: webgrp
        comment: Web tier
    # Rule lists, keyed by scope (cluster, node/<node>, vm/<vmid>, ct/<vmid>, group/<name>): the
    # whole ordered list, first rule first, planned as the fewest inserts, moves, updates and deletes.
    # Rules the list holds that this minion did not write are refused unless `adopt: true`; a change
    # that would cut this minion off the API or SSH unless `allow_lockout: true`. A rule without
    # `enable` is stored disabled, as PVE stores it: write `enable: 1`.
    rules:
      ct/120:                   # the resolver's own firewall (Firewall of CT 120)
        rules:
          - {type: in, action: ACCEPT, macro: DNS, source: lab_net, enable: 1, comment: lab clients}
          - {type: in, action: ACCEPT, macro: SSH, source: lab_net, enable: 1, comment: ssh from the lab}
          - {type: in, action: DROP, enable: 1, log: info, comment: the rest}

  # Resource pools; members are not managed here.
  pools:
    prod:
      comment: Production guests
    lab:
      comment: Experiments, may be wiped

  # Ceph pools of the cluster's Ceph, managed through one node: min_size at most size; pg_num is the
  # autoscaler's while pg_autoscale_mode is on; nothing is written while Ceph is unhealthy.
  ceph_pools:
    vmdisks:
      node: pve1
      size: 3
      min_size: 2
      pg_num: 32
      application: rbd

  # Storage definitions (storage.cfg, cluster-wide): type is identity; server, export and path are
  # fixed once created; content and nodes are sets; the data is never removed with a definition.
  storage:
    backups:
      type: nfs
      server: 192.0.2.20
      export: /export/pve
      content: backup,iso
      prune-backups: keep-last=3
    # Guest disks on the Ceph pool above (an rbd storage requires the pool it names).
    ceph-vm:
      type: rbd
      pool: vmdisks
      content: images,rootdir
      krbd: false

  # Downloaded files (Storage → ISO Images → Download from URL): PVE fetches the URL into the storage on
  # each node that needs it (local is not shared: every node), refusing a body whose checksum differs.
  # A download without a checksum is refused unless verify: false. PVE shows no checksum afterwards, so
  # the ownership row keeps it: a changed url or checksum is a re-download, refused unless replace: true.
  content:
    alpine-virt-iso:
      storage: local          # a file storage whose content includes iso; the volid is local:iso/<filename>
      content: iso            # iso, vztmpl or import
      filename: alpine-virt-3.22.2-x86_64.iso
      url: https://dl-cdn.alpinelinux.org/alpine/v3.22/releases/x86_64/alpine-virt-3.22.2-x86_64.iso
      # The sha256 of what the demo's fake serves at that URL: on a real cluster, the one Alpine publishes.
      checksum: 0818ff0c60238a7925318f3bba8c30cc3d2d774d4d7e0ab3a5a508cdf3cb5afb
      checksum-algorithm: sha256

  # Backup jobs (Datacenter → Backup), cluster-wide. The schedule is a calendar event compared by
  # meaning ('02:00' and '2:00' are one); every plan notes the declared guests no enabled job covers.
  backup_jobs:
    nightly:
      schedule: '02:00'
      storage: backups
      vmid: [120, 150, 151, 152, 210, 211, 220]   # or pool: <poolid>, or all: true with exclude: [...]
      mode: snapshot
      compress: zstd
      prune-backups: keep-daily=7,keep-weekly=4
      comment: Every guest of this estate, nightly

  # The datacenter's options (datacenter.cfg), one entry per cluster: only the keys named here are
  # compared, property strings by meaning (sub-key order, PVE's defaults); null clears a key.
  cluster_options:
    datacenter:
      keyboard: en-us
      migration: type=secure,network=10.10.0.0/24
      next-id: lower=100,upper=9999
      tag-style:
        shape: dense
      description: Lab cluster, managed by Salt

  # External metric servers (Datacenter -> Metric Server): PVE's defaults are no drift, a value back
  # at its default is deleted; the type is the server's identity. PVE connects to the server before
  # it saves a create or an update (set disable: true to save one that is not reachable yet).
  metric_servers:
    influx:
      type: influxdb
      server: influx.lab.example
      port: 8086
      influxdbproto: https
      organization: lab
      bucket: pve
      secret_serial: 1      # token: from secrets.sls; written again only when this changes
  # Storage replication (Datacenter -> Replication): <vmid>-<jobnum>, after the guests. Every volume of
  # the guest must be on a zfspool storage (or replicate=0), the target another cluster node; a
  # destroy only marks the job, PVE's replication runner removes it on its next run.
  replication:
    120-0:                  # dns (CT 120, adopted above), its rootfs on local-zfs
      target_node: pve2     # fixed: another target is another job
      schedule: "*/30"      # compared by meaning; PVE's default is */15
      rate: 50              # MB/s
      comment: dns1 to pve2
  # Resource mappings (Datacenter -> Resource Mappings): a cluster-wide name for a device on each node,
  # which a VM names (hostpci0: mapping=lab-gpu) so an API token with Mapping.Use can pass it through.
  # The entries are a set (one per device per node), compared by meaning; never deleted while a VM
  # names the mapping.
  mappings:
    pci:
      lab-gpu:
        description: The lab's GPU
        map:
          - node=pve1,path=0000:01:00.0,id=10de:1eb8,iommugroup=14
  # ACME challenge plugins (Datacenter -> ACME): a DNS plugin of one of PVE's DNS APIs, its API's
  # settings (data) from secrets.sls; validation-delay 30 and every node are PVE's defaults.
  acme:
    plugins:
      lab-dns:
        type: dns
        api: cf
        validation-delay: 60
        nodes: [pve1, pve2]
        secret_serial: 1    # data: from secrets.sls; written again only when this changes
  # Notifications (Datacenter -> Notifications): endpoints with their secrets from secrets.sls, and
  # matchers routing notifications to them. A matcher's targets (PVE's target list) must exist or be
  # declared here; lists compare as sets. The built-in mail-to-root and default-matcher can be
  # adopted (adopt: true) and are never deleted.
  notifications:
    endpoints:
      ops-mail:
        type: smtp
        server: mail.lab.example
        mode: starttls      # the port follows the mode (587) when left out
        username: pve
        from-address: pve@lab.example
        mailto: [ops@lab.example]
        secret_serial: 1    # password: from secrets.sls; written again only when this changes
    matchers:
      backups-to-ops:
        match-field: ["exact:type=vzdump"]
        match-severity: ["warning,error"]
        targets: [ops-mail]
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

  # A node's own settings (System → DNS, Hosts, Time; Updates → Repositories). Every node already has
  # them, so the first write takes them over: adopt: true. Only the declared keys and entries are
  # compared; none is ever deleted (ensure: absent forgets; PVE has no DELETE for them).
  nodes:
    pve1:
      dns:                      # /etc/resolv.conf: each write carries search and every server that stays
        adopt: true
        search: lab.example
        dns1: 10.0.0.53         # the resolver, CT 120
        dns2: 10.0.0.1
      hosts:                    # /etc/hosts: these lines by address; every other line kept byte for byte
        adopt: true
        entries:
          10.0.0.53: dns1.lab.example dns1
          192.0.2.20: nas.lab.example nas
      time:
        adopt: true
        timezone: Europe/Vienna # checked at plan against the zone names PVE takes
      apt:                      # never an upgrade or apt update
        adopt: true             # the enterprise entry is live and enabled: disabling it takes it over
        repositories:
          - handle: no-subscription             # added to its standard file, or enabled where it is
          - {handle: enterprise, enabled: false}  # its entries disabled, never deleted

  # A node's pveproxy certificate (System → Certificates), one entry per node. A custom one's key comes
  # from secrets.sls (proxmox:certificates:<node>:key), checked to be the chain's leaf's, never shown or
  # stored; the plan is refused unless the target's verify bundle trusts the chain, or trusted: true.
  # Left out of this example: it would need a private key committed in secrets.sls.
  # certificates:
  #   pve1:
  #     type: custom
  #     certificates: |         # the PEM chain, leaf first
  #       -----BEGIN CERTIFICATE-----
  #       ...
  #       -----END CERTIFICATE-----
  #   pve2:
  #     type: acme              # with account lab (node.sls) and plugin lab-dns (above); renewed 30 days ahead
  #     account: lab
  #     domains:
  #       - {domain: pve2.lab.example, plugin: lab-dns}
  #     trusted: true           # the verify bundle cannot vouch for a certificate not issued yet

  # SDN: zones, then vnets, then subnets land in the pending SDN configuration; `apply: true`
  # commits it (Datacenter → SDN → Apply) under PVE's SDN lock, with the same health checks.
  sdn:
    apply: true
    # An EVPN controller (pending like the zones until the apply; one per cluster) and PVE's own IPAM,
    # adopted: it is never deleted. IPAMs and DNS servers are written at once; a netbox or phpipam
    # IPAM's token and a powerdns server's key go in secrets.sls (proxmox:sdn:ipams:<id>:token).
    controllers:
      evpnctl:
        type: evpn
        asn: 65000
        peers: [10.0.0.1, 10.0.0.2]
    ipams:
      pve:
        type: pve
        adopt: true
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
    # What the CI system may do with the guests of pool prod (granted below to its group and token).
    CiDeploy:
      privs: [VM.Audit, VM.Console, VM.PowerMgmt, VM.Backup]
    SaltProxmoxRead:
      # SDN.Audit: bridges, zones, vnets; Mapping.Audit: resource mappings, notification endpoints and
      # matchers
      privs: [VM.Audit, Datastore.Audit, Sys.Audit, Pool.Audit, SDN.Audit, Mapping.Audit]
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
        # Sys.Modify on /nodes/<node> also writes a node's DNS, hosts file, time zone, APT repositories, certificate
        - Sys.Modify           # the cluster firewall (aliases, options, IP sets, groups), custom roles, node interfaces and reloads
        - Pool.Allocate        # pools
        - Permissions.Modify   # ACL entries
        - VM.Backup            # backup jobs of a pool (pve-manager API2/Backup.pm)
        - VM.Snapshot          # snapshots (proxmox_snapshot, proxmox.snapshot_create/delete)
        - VM.Snapshot.Rollback # proxmox.snapshot_rollback
        - VM.Replicate         # replication jobs (pve-manager API2/ReplicationConfig.pm)
        - VM.Migrate           # a declared move (qemu-server API2/Qemu.pm migrate_vm, migrate_vm_precondition)
        - Datastore.AllocateTemplate  # downloads (pve-storage API2/Storage/Status.pm download_url)
        - SDN.Allocate         # SDN zones, vnets, subnets, the SDN lock and apply
        - Sys.Console          # HA resources, groups and rules (pve-ha-manager API2/HA/*.pm)
        - VM.Backup            # restoring a backup (pve-storage check_volume_access)
        - User.Modify          # users and their API tokens (pve-access-control API2/User.pm)
        - Realm.AllocateUser   # users of the pve realm
        - Group.Allocate       # groups
        - Mapping.Modify       # resource mappings (API2/Cluster/Mapping/*.pm), notification endpoints and matchers (API2/Cluster/Notifications.pm)
    # Reading a backup archive (a restore's plan lists it with the read token): PVE shows a backup only
    # to a caller with Datastore.AllocateSpace on its storage and VM.Backup on the guest it was taken
    # from (pve-storage Storage.pm check_volume_access), so grant them there only (acls below).
    SaltProxmoxArchiveRead:
      privs: [Datastore.AllocateSpace, VM.Backup]
  # `salt-call proxmox.privileges_needed` prints the least of these two roles for the estate declared
  # here, and what each token lacks today with the pveum lines that grant it.

  # Access as code. Membership lives on the user (`groups`); the group never compares its members.
  groups:
    automation:
      comment: CI systems
  users:
    ci@pve:
      groups: [automation]
      email: ci@example.org
      comment: The CI system's account
      # password: from secrets.sls (pve realm), sent with the create only, never shown or compared
      password_serial: 1
  # An API token for the CI system: PVE shows its secret once, at create; it goes straight to OpenBao
  # at `store` ({token_id, secret}) and nowhere else. Raise secret_serial to draw a new one.
  tokens:
    ci@pve!deploy:
      privsep: 1                # its own ACL entries, within its user's
      comment: CI deployments
      store: secret/data/pve-tokens/ci-deploy
      secret_serial: 1

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
    salt-read-on-backups:        # the storage holding the archive web2 is restored from
      path: /storage/local
      role: SaltProxmoxArchiveRead
      token: salt-read@pve!plan
    salt-read-on-web-backups:    # the guest that archive was taken from
      path: /vms/150
      role: SaltProxmoxArchiveRead
      token: salt-read@pve!plan
    # The CI system manages the guests of pool prod: its group, and its token (privilege separated).
    automation-on-prod:
      path: /pool/prod
      role: CiDeploy
      group: automation
    ci-deploy-on-prod:
      path: /pool/prod
      role: CiDeploy
      token: ci@pve!deploy

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
          # proxmox.export lists the policies (their names only; it reads those above).
          path "sys/policies/acl" {
            capabilities = ["list"]
          }
          # ...and keeps the secrets of the API tokens it creates (proxmox:tokens store:), read back
          # once written. Nothing else of salt-proxmox reads them: hand each to its consumer.
          path "secret/data/pve-tokens/*" {
            capabilities = ["create", "read", "update"]
          }
