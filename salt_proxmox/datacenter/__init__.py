"""The datacenter's own settings (Datacenter → Metric Server, ...), each a simple object family:
external metric servers (``metrics``)."""
