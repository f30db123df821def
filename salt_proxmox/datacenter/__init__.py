"""The datacenter's own settings (Datacenter → Options, Metric Server, Notifications, ...), each a simple
object family: the cluster options of ``datacenter.cfg`` (``options``, its keys' formats in ``dcformats``),
external metric servers (``metrics``), and notification endpoints and matchers (``notifications``,
``matchers``)."""
