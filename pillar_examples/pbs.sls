# A Proxmox Backup Server beside the cluster (proxmox:pbs_targets, in the minion config like
# proxmox:targets; top.sls includes this file only where one is configured).
proxmox:
  pbs:
    # Datastores of the PBS target (the only one, backup1, unless an entry says target:). path and
    # backend are fixed once created; prune-schedule and keep-* become the create's prune job.
    datastores:
      store1:
        path: /mnt/datastore/store1
        comment: PVE backups
        gc-schedule: daily
        prune-schedule: daily
        keep-daily: 7
        keep-weekly: 4
        verify-new: true

  storage:
    # A pbs storage wired to the datastore above, both sides in one plan: the product reads the PBS
    # certificate's fingerprint, makes an API token for this cluster (user@pbs!pve-<target>) with
    # DatastoreBackup on /datastore/store1, keeps its secret in OpenBao at pbs_secret_path and writes
    # it as the storage's password. server and port are the PBS target's. Raise pbs_token_serial to
    # make a new token.
    pbs-backups:
      type: pbs
      datastore: store1
      content: backup
      pbs_target: backup1
      pbs_user: pve-backup@pbs
      pbs_secret_path: secret/data/salt-proxmox/pbs/pbs-backups
      pbs_token_serial: 1
