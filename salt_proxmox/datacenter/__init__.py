"""The datacenter's own settings (Datacenter → Options, Metric Server, ...), each a simple object family:
the cluster options of ``datacenter.cfg`` (``options``, its keys' formats in ``dcformats``), external
metric servers (``metrics``), storage replication jobs (``replication``) and resource mappings
(``mappings``; what a VM's devices name of them is ``mapping_use``)."""
