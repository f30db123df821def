# A small estate: two new containers and one that already runs on the cluster.
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
