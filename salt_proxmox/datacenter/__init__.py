"""The datacenter's own settings (Datacenter → Options, Metric Server, Notifications, ...), each a simple
object family: the cluster options of ``datacenter.cfg`` (``options``, its keys' formats in ``dcformats``),
external metric servers (``metrics``), notification endpoints and matchers (``notifications``,
``matchers``), storage replication jobs (``replication``), resource mappings (``mappings``; what a VM's
devices name of them is ``mapping_use``), ACME DNS plugins (``acme``) and ACME accounts (``acme_account``,
read and written through the root lane)."""
