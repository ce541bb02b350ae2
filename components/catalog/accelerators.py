"""GPU facts: memory, bandwidth, compute and the GPU-to-GPU link, one row each in data/accelerators.csv (with its
source; the columns are this dataclass, read by components/catalog/tables.py).

vLLM budgets from the total that torch.cuda.mem_get_info reports, which on the big parts is 0.5-1.2 GiB below
the EC2 figure (ECC and driver reservations grow with the HBM size). Where the torch total has been seen in public
logs it is given as `torch_total_gib`; elsewhere it is derived from `reported_mib`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .tables import DATA, read_table

# For the 24 GB parts (no torch total in the table): ~50 MiB below the EC2 figure, as SIZING-FACTS
# gives for an A10G (22,888 MiB shows 22.30 GiB to vLLM).
_DRIVER_RESERVED_MIB = 50
LINKS = ("pcie", "nvlink3", "nvlink4", "nvlink5")


@dataclass(frozen=True)
class Accelerator:
    id: str
    name: str
    reported_mib: int
    hbm_gbps: float  # GB/s (10^9 bytes)
    bf16_tflops: float  # dense
    fp8_tflops: float | None  # dense; None = no FP8 tensor cores (FP8 weights run W8A16)
    link: str  # "pcie" | "nvlink3" | "nvlink4" | "nvlink5"
    # Effective one-direction GB/s per GPU for all-reduce traffic: half the NVLink
    # bidirectional figure; PCIe Gen4 x16 (32 GB/s raw) taken as 25 GB/s.
    link_gbps: float
    source: str
    torch_total_gib: float | None = None  # observed torch.cuda.mem_get_info total; None = derived

    @property
    def visible_gib(self) -> float:
        """Memory vLLM sees (torch.cuda.mem_get_info total)."""
        if self.torch_total_gib is not None:
            return self.torch_total_gib
        return (self.reported_mib - _DRIVER_RESERVED_MIB) / 1024

    @property
    def supports_fp8(self) -> bool:
        return self.fp8_tflops is not None

    @property
    def nvlink(self) -> bool:
        return self.link.startswith("nvlink")


def load(folder: Path = DATA) -> dict[str, Accelerator]:
    """`folder`/accelerators.csv by id (a DataError names the file, line and column of a bad row)."""
    return {a.id: a for a in read_table("accelerators.csv", Accelerator, allowed={"link": ("GPU link", LINKS)},
                                        folder=folder)}


ACCELERATORS: dict[str, Accelerator] = load()
