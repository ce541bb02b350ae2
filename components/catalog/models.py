"""Model architectures the planner sizes from.

Sources (see docs/sizing.md): a = oumi-ai/oumi configs/recipes/llama3_1/README.md;
b = AI-Hypercomputer/maxtext src/MaxText/configs/models/*.yml; c = huggingface.co/Qwen/Qwen2.5-32B
config.json; d = huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1 config.json; e =
vllm-project/recipes models/*.yaml; f = vLLM docs deepseek_v3 config; g = gpt-oss-120b config
mirror; h = Qwen2.5 Instruct config mirrors (⚠ re-check); i = huggingface.co/deepseek-ai/DeepSeek-V3
config.json (n_routed_experts, num_experts_per_tok, moe_intermediate_size).
"""
from __future__ import annotations

from dataclasses import dataclass, field

GB = 1e9
# Bits per parameter of a quantized linear layer, scales included (docs/models.md): fp8/int8 one byte;
# int4 (AWQ/GPTQ, group 128) 4 + (16-bit scale + 4-bit zero) / 128; NVFP4 4 + FP8 scale / 16; MXFP4 4 + 8 / 32.
LINEAR_BITS = {"fp8": 8.0, "int8": 8.0, "int4": 4 + 20 / 128, "nvfp4": 4.5, "mxfp4": 4.25}
PRECISIONS = ("bf16", *LINEAR_BITS)


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    hf_repo: str  # the checkpoint served at the model's native precision
    params_b: float  # total parameters, billions
    layers: int
    hidden: int
    heads: int
    kv_heads: int  # for MLA models: 1 (the latent "head"), see mla_dim
    head_dim: int
    vocab: int
    max_context: int
    source: str
    active_params_b: float | None = None  # MoE: parameters touched per token
    experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    mla_dim: int = 0  # MLA latent width (kv_lora_rank + qk_rope_head_dim); 0 = not MLA
    sliding_window: int = 0  # window of the sliding-window layers
    sliding_layers: int = 0  # how many of `layers` use the sliding window
    precisions: tuple[str, ...] = ("bf16", "fp8")  # what may be asked for; the first is the default
    fp8_repo: str | None = None  # pre-quantized FP8 checkpoint; None = vLLM quantizes online
    fp8_block_quantized: bool = False  # block-wise FP8 (128x128): TP must divide moe_intermediate/128
    weights_gb: dict[str, float] = field(default_factory=dict)  # checkpoint size override by precision
    tied_embeddings: bool = False  # tie_word_embeddings: the LM head is the input embedding
    notes: tuple[str, ...] = ()  # what the description left out or estimated (config-derived specs)
    aliases: tuple[str, ...] = ()  # other Hub ids of the same weights
    architectures: tuple[str, ...] = ()  # config.json `architectures` (config-derived specs; checked against vLLM's)
    mtp_layers: int | None = None  # config.json num_nextn_predict_layers; None: planner/extras.py MTP_LAYERS
    quant_method: str | None = None  # config.json quantization_config.quant_method (config-derived specs)
    gated: bool = False  # Hub-described: its config.json needed a token (catalog/hub.py GATED), so hfToken is required

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.mla_dim > 0

    @property
    def embedding_params(self) -> float:
        """Input embedding plus the LM head unless tied (both stay 16-bit in quantized checkpoints)."""
        return (1 if self.tied_embeddings else 2) * self.vocab * self.hidden

    def repo_for(self, precision: str) -> str:
        if precision == "fp8" and self.fp8_repo:
            return self.fp8_repo
        return self.hf_repo

    def needs_online_quantization(self, precision: str) -> bool:
        return precision == "fp8" and self.precisions[0] != "fp8" and not self.fp8_repo

    def weight_bytes(self, precision: str) -> float:
        """Bytes of weights for the whole model at `precision`."""
        if precision in self.weights_gb:
            return self.weights_gb[precision] * GB
        params = self.params_b * GB
        if precision == "bf16":
            return params * 2
        if precision in LINEAR_BITS:  # quantized linear layers, embeddings and LM head in 2 bytes
            return (params - self.embedding_params) * LINEAR_BITS[precision] / 8 + self.embedding_params * 2
        raise ValueError(f"no weight size for {self.id} at {precision}")

    def expert_split(self) -> tuple[float, float]:
        """(dense parameters, parameters of one expert summed over layers), for MoE models.

        From total = dense + E*e and active = dense + k*e.
        """
        if not self.is_moe or self.active_params_b is None:
            return self.params_b * GB, 0.0
        e = (self.params_b - self.active_params_b) * GB / (self.experts - self.experts_per_token)
        return self.params_b * GB - self.experts * e, e


_LLAMA = dict(vocab=128_256, max_context=131_072, head_dim=128)
_QWEN25 = dict(vocab=152_064, max_context=32_768, head_dim=128)

MODELS: dict[str, ModelSpec] = {
    m.id: m
    for m in [
        ModelSpec("llama-3.1-8b", "Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", 8.03, 32, 4096, 32, 8,
                  source="a", fp8_repo="RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8",
                  aliases=("meta-llama/Meta-Llama-3.1-8B-Instruct",), **_LLAMA),
        ModelSpec("llama-3.1-70b", "Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", 70.6, 80, 8192, 64, 8,
                  source="a", fp8_repo="RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8",
                  aliases=("meta-llama/Meta-Llama-3.1-70B-Instruct",), **_LLAMA),
        # 8 KV heads: some old mirrors say 16 (SIZING-FACTS pitfall 7).
        ModelSpec("llama-3.1-405b", "Llama-3.1-405B", "meta-llama/Llama-3.1-405B-Instruct", 405, 126, 16384, 128, 8,
                  # Meta's own meta-llama/Llama-3.1-405B-Instruct-FP8 is an fbgemm_fp8 checkpoint, a method
                  # vLLM 0.31 deprecates and refuses without --allow-deprecated-quantization
                  # (config/vllm_registry.py DEPRECATED_QUANTIZATION_METHODS); Red Hat's compressed-tensors FP8
                  # of the same model loads as the 8B and 70B ones do.
                  source="a", fp8_repo="RedHatAI/Meta-Llama-3.1-405B-Instruct-FP8",
                  aliases=("meta-llama/Meta-Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B-Instruct-FP8",
                           "meta-llama/Llama-3.1-405B-Instruct-FP8"),
                  **_LLAMA),
        ModelSpec("llama-3.3-70b", "Llama-3.3-70B", "meta-llama/Llama-3.3-70B-Instruct", 70.6, 80, 8192, 64, 8,
                  source="b, e", fp8_repo="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", **_LLAMA),
        ModelSpec("qwen2.5-7b", "Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 7.6, 28, 3584, 28, 4,
                  source="b, h", **_QWEN25),
        ModelSpec("qwen2.5-32b", "Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct", 32.5, 64, 5120, 40, 8,
                  source="c, h", **_QWEN25),
        ModelSpec("qwen2.5-72b", "Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct", 72.7, 80, 8192, 64, 8,
                  source="h ⚠", **_QWEN25),
        # head_dim 128 from the config although hidden/heads = 80 (SIZING-FACTS pitfall 2).
        ModelSpec("qwen3-32b", "Qwen3-32B", "Qwen/Qwen3-32B", 32.8, 64, 5120, 64, 8, 128, 151_936, 40_960,
                  source="b, e", fp8_repo="Qwen/Qwen3-32B-FP8"),
        ModelSpec("qwen3-235b-a22b", "Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B-Instruct-2507",
                  235, 94, 4096, 64, 4, 128, 151_936, 262_144, source="b, e",
                  active_params_b=22, experts=128, experts_per_token=8, moe_intermediate=1536,
                  fp8_repo="Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", fp8_block_quantized=True),
        ModelSpec("mixtral-8x7b", "Mixtral-8x7B-Instruct", "mistralai/Mixtral-8x7B-Instruct-v0.1",
                  46.7, 32, 4096, 32, 8, 128, 32_000, 32_768, source="b, d (active ⚠)",
                  active_params_b=12.9, experts=8, experts_per_token=2, moe_intermediate=14_336,
                  aliases=("mistralai/Mixtral-8x7B-v0.1",)),
        # MLA: one latent head of 512 + 64 that is NOT divided by TP (pitfall 4). FP8 checkpoint only.
        ModelSpec("deepseek-v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3", 671, 61, 7168, 128, 1, 576,
                  129_280, 163_840, source="b, e, f, i",
                  active_params_b=37, experts=256, experts_per_token=8, moe_intermediate=2048,
                  mla_dim=576, precisions=("fp8",), fp8_block_quantized=True),
        # MXFP4 experts; 18 of 36 layers use a 128-token sliding window. Checkpoint size from the repo.
        ModelSpec("gpt-oss-120b", "gpt-oss-120b", "openai/gpt-oss-120b", 117, 36, 2880, 64, 8, 64, 201_088,
                  131_072, source="b, g, e (size ⚠)", active_params_b=5.1, experts=128, experts_per_token=4,
                  moe_intermediate=2880, sliding_window=128, sliding_layers=18,
                  precisions=("mxfp4",), weights_gb={"mxfp4": 65.3}),
    ]
}

FP8_SUFFIXES = ("-fp8-dynamic", "-fp8")


def _names(m: ModelSpec) -> list[str]:
    """Every name the catalog knows a model by: its id, and each of its Hub repo ids with and without the
    organisation and with and without an -FP8 suffix."""
    names = [m.id]
    for repo in (m.hf_repo, m.fp8_repo, *m.aliases):
        if repo:
            names += [repo, repo.split("/", 1)[-1]]
    return names


_BY_NAME: dict[str, ModelSpec] = {}
_SHOWN: dict[str, str] = {}  # lower-case key -> the name as written, for suggestions
for _m in MODELS.values():
    for _n in _names(_m):
        _BY_NAME.setdefault(_n.lower(), _m)
        _SHOWN.setdefault(_n.lower(), _n)


def _strip_fp8(key: str) -> str:
    for suffix in FP8_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def find_model(ref: str) -> ModelSpec | None:
    """A catalog model by id or by any Hub id of it (case-insensitive; -FP8 / -FP8-dynamic suffix or not;
    without the organisation too, but an organisation given must be the model's own)."""
    key = ref.strip().lower()
    return _BY_NAME.get(key) or _BY_NAME.get(_strip_fp8(key))


def names_fp8(ref: str, spec: ModelSpec) -> bool:
    """Whether `ref` names the FP8 checkpoint of `spec` (its FP8 repo, or its name with an -FP8 suffix)."""
    key = ref.strip().lower()
    return bool(spec.fp8_repo and key in (spec.fp8_repo.lower(), spec.fp8_repo.split("/")[-1].lower())) \
        or _strip_fp8(key) != key


def closest_models(ref: str, n: int = 3) -> list[str]:
    """The catalog names closest to `ref` (difflib), for "did you mean"."""
    import difflib

    key = ref.strip().lower()
    found = difflib.get_close_matches(key, list(_BY_NAME), n=n * 3, cutoff=0.5)
    found += difflib.get_close_matches(key.split("/")[-1], list(_BY_NAME), n=n * 3, cutoff=0.5)
    out: list[str] = []
    for k in found:
        shown = _BY_NAME[k].hf_repo if "/" in key else _BY_NAME[k].id
        if shown not in out:
            out.append(shown)
    return out[:n]


# Multi-token-prediction layers shipped in the checkpoint, by catalog id: (layers, parameters in billions).
# deepseek-v3: config.json num_nextn_predict_layers = 1; the model card: "685B = 671B main model + 14B MTP
# module" (huggingface.co/deepseek-ai/DeepSeek-V3, read 2026-12-02).
MTP_LAYERS = {"deepseek-v3": (1, 14.0)}


def mtp_layers(model: ModelSpec) -> int:
    own = getattr(model, "mtp_layers", None)
    return own if own is not None else MTP_LAYERS.get(model.id, (0, 0.0))[0]
