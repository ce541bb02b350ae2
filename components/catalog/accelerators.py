"""GPU facts: memory, bandwidth, compute and the GPU-to-GPU link.

Every row names its source. `reported_mib` is what EC2 reports as `instance-gpu-memory`
(aws/karpenter-provider-aws website/content/en/docs/reference/instance-types.md);
the other figures are NVIDIA datasheet values (see docs/sizing.md).

vLLM budgets from the total that torch.cuda.mem_get_info reports, which on the big parts is
0.5-1.2 GiB below the EC2 figure (ECC and driver reservations grow with the HBM size). Where the
torch total has been seen in public logs it is given as `torch_total_gib` (the `_TORCH` sources below).
"""
from __future__ import annotations

from dataclasses import dataclass

# For the 24 GB parts (no torch total in the table): ~50 MiB below the EC2 figure, as SIZING-FACTS
# gives for an A10G (22,888 MiB shows 22.30 GiB to vLLM).
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


_DS = "NVIDIA datasheet; MiB: karpenter-provider-aws instance-types.md (SIZING-FACTS.md)"
# Torch totals, as printed by vLLM's profiler ("total_gpu_memory (79.18GiB)") and torch's OOM message
# ("GPU 0 has a total capacity of 79.18 GiB") in public issues and logs, late 2025 - 2026 drivers.
_TORCH = "; torch total: vLLM profiler / torch OOM logs"

ACCELERATORS: dict[str, Accelerator] = {
    a.id: a
    for a in [
        # A10G: NVIDIA does not publish a dense BF16 figure for the AWS part (⚠ ~70).
        Accelerator("a10g", "NVIDIA A10G", 22_888, 600, 70, None, "pcie", 25, _DS + " ⚠ TFLOPS"),
        Accelerator("l4", "NVIDIA L4", 22_888, 300, 121, 242, "pcie", 25, _DS),
        Accelerator("l40s", "NVIDIA L40S", 45_776, 864, 362, 733, "pcie", 25, _DS + _TORCH, torch_total_gib=44.39),
        Accelerator("a100-40gb", "NVIDIA A100 40GB SXM", 40_960, 1555, 312, None, "nvlink3", 300, _DS + _TORCH,
                    torch_total_gib=39.39),
        Accelerator("a100-80gb", "NVIDIA A100 80GB SXM", 81_920, 2039, 312, None, "nvlink3", 300, _DS + _TORCH,
                    torch_total_gib=79.25),
        Accelerator("h100", "NVIDIA H100 80GB SXM", 81_920, 3350, 989, 1979, "nvlink4", 450, _DS + _TORCH,
                    torch_total_gib=79.18),
        Accelerator("h200", "NVIDIA H200 141GB", 144_384, 4800, 989, 1979, "nvlink4", 450, _DS + _TORCH,
                    torch_total_gib=139.81),
        Accelerator("b200", "NVIDIA B200 (HGX)", 183_359, 8000, 2250, 4500, "nvlink5", 900, _DS + _TORCH,
                    torch_total_gib=178.35),
    ]
}
