"""Every number TPC-C records. Its latency percentiles per transaction type
(``transactions.<type>.p99_us``) are iolab.metrics' common ones; its load numbers
(``load_seconds``, ``load_mb_per_second``, ``index_seconds``, ``on_disk_bytes``) mean what
TPC-H's of the same names mean and are declared there."""

from __future__ import annotations

from iolab.metrics import Metric, R, declare

METRICS: tuple[Metric, ...] = (
    declare("nopm", "NOPM", R, False, "New-Orders per minute, the database's count"),
    declare("nopm_client", "NOPM", R, False, "New-Orders per minute, the client's count"),
    declare("nopm_orders", "NOPM", R, False, "orders added per minute"),
    declare("tpm", "TPM", R, False, "transactions per minute, the database's counter"),
    declare("tpm_client", "TPM", R, False, "transactions per minute, the client's count"),
)
