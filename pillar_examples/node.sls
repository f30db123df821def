# What only root@pam may write, through the target's root lane (root_lane: pvesh under the target in the
# minion config, the states running as root on a node of the cluster: README, "Or through the root
# lane"). top.sls includes this file only where a target has one; Salt merges it into proxmox.sls's
# pillar, as it merges secrets.sls.
proxmox:
  lxc:
    # A file server bind-mounting the node's /srv/share. An API token may not set a bind mount point
    # (pve-container src/PVE/LXC.pm check_ct_modify_config_perm: root@pam only), so the create goes
    # through the lane: the plan says "via root lane (pvesh on pve1)".
    files:
      vmid: 153
      node: pve1
      ostemplate: local:vztmpl/debian-13-standard_13.0-1_amd64.tar.zst
      unprivileged: true
      hostname: files
      cores: 1
      memory: 512
      rootfs: local-lvm:4
      mp0: /srv/share,mp=/srv/share   # a bind mount: the node's directory, no volume of a storage
      net0: name=eth0,bridge=vmbr0,ip=10.0.0.40/24,gw=10.0.0.1
      description: File share, the node's /srv/share bind-mounted

  # Snippets: files in a storage's snippets directory (PVE has no API call that writes one, so the lane
  # writes the file on its node). Storage snippets is a dir storage taking them (pvesm add dir snippets
  # --path /var/lib/snippets --content snippets); it is not shared, so only a guest on the lane's node
  # may name one. The content is compared by its sha256, never shown, and never a state argument: the
  # state reads it from this entry (cloud-init user data may hold secrets).
  snippets:
    snippets:
      ci-user.yaml:
        content: |
          #cloud-config
          package_update: true
          packages: [qemu-guest-agent]
          runcmd:
            - [systemctl, enable, --now, qemu-guest-agent]

  # An ACME account (Datacenter -> ACME -> Accounts): every ACMEAccount.pm method but the index is
  # root@pam's alone, so it is read and registered through the lane. tos_url agrees to the CA's terms
  # (GET /cluster/acme/meta termsOfService); the directory is fixed once registered.
  acme:
    accounts:
      lab:
        contact: [pki@lab.example]
        directory: https://acme-staging-v02.api.letsencrypt.org/directory
        tos_url: https://letsencrypt.org/documents/LE-SA-v1.5-February-24-2025.pdf

  qemu:
    # The cloned CI runner (proxmox.sls) takes its cloud-init user data from the snippet above; its
    # state requires the snippet's, so the file is there before the VM names it.
    ci:
      cicustom: user=snippets:snippets/ci-user.yaml
