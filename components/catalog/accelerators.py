"""GPU facts: memory, bandwidth, compute and the GPU-to-GPU link.

Every row names its source. `reported_mib` is what EC2 reports as `instance-gpu-memory`
(aws/karpenter-provider-aws website/content/en/docs/reference/instance-types.md);
the other figures are NVIDIA datasheet values (see ../shared/SIZING-FACTS.md).
"""
from __future__ import annotations

from dataclasses import dataclass

# torch.cuda.mem_get_info reports ~50 MiB less than the EC2 figure (an A10G with
# 22,888 MiB shows 22.30 GiB to vLLM); vLLM budgets from what torch reports.
_DRIVER_RESERVED_MIB = 50


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

    @property
    def visible_gib(self) -> float:
        """Memory vLLM sees (torch.cuda.mem_get_info total)."""
        return (self.reported_mib - _DRIVER_RESERVED_MIB) / 1024

    @property
    def supports_fp8(self) -> bool:
        return self.fp8_tflops is not None

    @property
    def nvlink(self) -> bool:
        return self.link.startswith("nvlink")


_DS = "NVIDIA datasheet; MiB: karpenter-provider-aws instance-types.md (SIZING-FACTS.md)"

ACCELERATORS: dict[str, Accelerator] = {
    a.id: a
    for a in [
        # A10G: NVIDIA does not publish a dense BF16 figure for the AWS part (⚠ ~70).
        Accelerator("a10g", "NVIDIA A10G", 22_888, 600, 70, None, "pcie", 25, _DS + " ⚠ TFLOPS"),
        Accelerator("l4", "NVIDIA L4", 22_888, 300, 121, 242, "pcie", 25, _DS),
        Accelerator("l40s", "NVIDIA L40S", 45_776, 864, 362, 733, "pcie", 25, _DS),
        Accelerator("a100-40gb", "NVIDIA A100 40GB SXM", 40_960, 1555, 312, None, "nvlink3", 300, _DS),
        Accelerator("a100-80gb", "NVIDIA A100 80GB SXM", 81_920, 2039, 312, None, "nvlink3", 300, _DS),
        Accelerator("h100", "NVIDIA H100 80GB SXM", 81_920, 3350, 989, 1979, "nvlink4", 450, _DS),
        Accelerator("h200", "NVIDIA H200 141GB", 144_384, 4800, 989, 1979, "nvlink4", 450, _DS),
        Accelerator("b200", "NVIDIA B200 (HGX)", 183_359, 8000, 2250, 4500, "nvlink5", 900, _DS),
    ]
}
