"""What the pinned vLLM (0.31.0) accepts: its `vllm serve` flags and the names it registers.

Source: the vllm-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl on PyPI (read 2026-12-02), files named beside
each table. Regenerate on a vLLM bump: the flags are every long option string of the parser that `vllm serve`
builds (vllm/entrypoints/launchers/cli_args.py, make_arg_parser(FlexibleArgumentParser())); the parsers are
the keys of the lazy-registration tables below. Tests check the planner's arguments against VLLM_SERVE_FLAGS.
"""
from __future__ import annotations

VLLM_VERSION = "0.31.0"

# vllm/tool_parsers/__init__.py, _TOOL_PARSERS_TO_REGISTER (`--tool-call-parser NAME`)
TOOL_CALL_PARSERS = frozenset("""
    apertus cohere_command3 cohere_command4 deepseek_v3 deepseek_v31 deepseek_v32 deepseek_v4
    deepseek_v41 dots ernie45 functiongemma gemma4 gigachat3 glm45 glm47 granite granite-20b-fc granite4
    hermes hunyuan_a13b hy_v3 hy_v4 inkling internlm jamba k2_horizon kimi_k2 kimi_k3 lfm2 ling3
    llama3_json llama4_json llama4_pythonic longcat mimo minicpm5 minimax_m2 minimax_m3 mistral
    muse_glimmer olmo3 openai phi4_mini_json poolside_v1 pythonic qwen3_coder qwen3_xml seed_oss step3
    step3p5 xlam
""".split())

# vllm/reasoning/__init__.py, _REASONING_PARSERS_TO_REGISTER (`--reasoning-parser NAME`)
REASONING_PARSERS = frozenset("""
    cohere_command3 cohere_command4 deepseek_r1 deepseek_v3 deepseek_v4 deepseek_v41 ernie45 gemma4
    glm45 glm47 granite granite_thinking_parser holo2 hunyuan_a13b hy_v3 hy_v4 inkling k2_horizon
    kimi_k2 kimi_k3 ling3 mimo minimax_m2 minimax_m2_append_think minimax_m3 mistral muse_glimmer
    nemotron_v3 olmo3 openai_gptoss poolside_v1 qwen3 seed_oss step3 step3p5
""".split())

# vllm/model_executor/layers/quantization/__init__.py, QuantizationMethods (`--quantization NAME`)
QUANTIZATION_METHODS = frozenset("""
    awq auto_awq fp8 fbgemm_fp8 fp_quant modelopt modelopt_fp4 modelopt_mxfp8 modelopt_mixed auto_gptq
    gptq gptq_marlin awq_marlin humming compressed-tensors experts_int8 quark moe_wna16 torchao inc
    mxfp4 gpt_oss_mxfp4 deepseek_v4_fp8 online fp8_per_tensor fp8_per_block fp8_per_channel
    int8_per_channel_weight_only nvfp4_per_token mxfp8
""".split())

# the same file, DEPRECATED_QUANTIZATION_METHODS: vLLM refuses to load them without --allow-deprecated-quantization
# (vllm/config/model.py ModelConfig._verify_quantization)
DEPRECATED_QUANTIZATION_METHODS = frozenset({"fbgemm_fp8", "fp_quant"})

# vllm/config/lora.py, MaxLoRARanks (`--max-lora-rank`)
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

# vllm/config/speculative.py, SpeculativeMethod (the `method` of `--speculative-config`): the ones this
# project sizes. "mtp" reuses the target checkpoint's MTP layers (DeepSeek-V3's num_nextn_predict_layers).
SPECULATIVE_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model")

# every long option of `vllm serve` (make_arg_parser), 398 flags
VLLM_SERVE_FLAGS = frozenset("""
    --additional-config --aggregate-engine-logging --all2all-backend --allow-credentials
    --allow-deprecated-quantization --allowed-headers --allowed-local-media-path --allowed-media-domains
    --allowed-methods --allowed-origins --anthropic-disabled-thinking-effort --api-key
    --api-server-count --async-scheduling --attention-backend --attention-config --aux-output-config
    --block-size --chat-template --chat-template-content-format --code-revision --cohere-format
    --cohere-is-reasoning-model --collect-detailed-traces --compilation-config --config --config-format
    --convert --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds --cpu-offload-gb
    --cpu-offload-params --cudagraph-capture-sizes --cudagraph-metrics --data-parallel-address
    --data-parallel-backend --data-parallel-external-lb --data-parallel-hybrid-lb
    --data-parallel-multi-port-external-lb --data-parallel-rank --data-parallel-rpc-port
    --data-parallel-size --data-parallel-size-local --data-parallel-start-rank
    --data-parallel-supervisor-port --dbo-decode-token-threshold --dbo-prefill-token-threshold
    --dcp-comm-backend --dcp-kv-cache-interleave-size --dcp-q-replicate --decode-context-parallel-size
    --default-chat-template-kwargs --default-mm-loras --device-ids --device-memory-utilization
    --diffusion-config --disable-access-log-for-endpoints --disable-cascade-attn
    --disable-chunked-mm-input --disable-custom-all-reduce --disable-fastapi-docs
    --disable-hybrid-kv-cache-manager --disable-log-stats --disable-nccl-for-dp-synchronization
    --disable-sliding-window --disable-uvicorn-access-log --distributed-executor-backend
    --distributed-timeout-seconds --download-dir --dp-supervisor-probe-failure-threshold
    --dp-supervisor-probe-interval-s --dp-supervisor-probe-timeout-s --dp-sync-interval --dtype
    --ec-manager-config --ec-transfer-config --elastic-ep-max-dp-size --enable-auto-tool-choice
    --enable-batch-sharded-sampling --enable-chunked-prefill --enable-cumem-allocator --enable-dbo
    --enable-elastic-ep --enable-ep-weight-filter --enable-eplb --enable-expert-parallel
    --enable-fault-tolerance --enable-flash-late-interaction --enable-flashinfer-autotune
    --enable-force-include-usage --enable-layerwise-nvtx-tracing --enable-log-deltas
    --enable-log-outputs --enable-log-requests --enable-logging-iteration-details --enable-lora
    --enable-mamba-cache-stochastic-rounding --enable-mamba-shared-prefix-checkpoint
    --enable-mfu-metrics --enable-mixed-moe-lora-format --enable-mm-embeds --enable-moe-shared-loras
    --enable-nccl-comm-suspend --enable-offline-docs --enable-per-request-metrics
    --enable-prefix-caching --enable-prompt-embeds --enable-prompt-tokens-details
    --enable-request-id-headers --enable-return-routed-experts --enable-scale-out
    --enable-server-load-tracking --enable-sleep-mode --enable-ssl-refresh
    --enable-tokenizer-info-endpoint --enable-tower-connector-lora --enable-trace-replay --enforce-eager
    --engram-config --eplb-config --exclude-tools-when-tool-choice-none --expert-placement-strategy
    --fail-on-environ-validation --fault-tolerance-config --fingerprint-mode --fingerprint-value
    --fully-sharded-loras --gdn-prefill-backend --generation-config --gpu-memory-utilization --grpc
    --h11-max-header-count --h11-max-incomplete-event-size --headless --help --hf-config-path
    --hf-overrides --hf-token --host --ignore-patterns --interleave-mm-strings --io-processor-plugin
    --ir-op-priority --jit-monitor-mode --jit-monitor-verbose --kda-decode-backend --kda-prefill-backend
    --kernel-config --kv-cache-dtype --kv-cache-dtype-skip-layers --kv-cache-memory-bytes
    --kv-cache-metrics --kv-cache-metrics-sample --kv-events-config --kv-offloading-backend
    --kv-offloading-size --kv-sharing-fast-prefill --kv-transfer-config --language-model-only
    --limit-mm-per-prompt --linear-backend --load-format --log-config-file --log-error-stack --log-level
    --logging-config --logits-processors --logprobs-mode --long-prefill-token-threshold
    --long-prefill-token-threshold-adaptive --lora-dtype --lora-modules --lora-target-modules
    --mamba-backend --mamba-block-size --mamba-cache-dtype --mamba-cache-mode
    --mamba-cache-philox-rounds --mamba-ssm-cache-dtype --mamba-ssu-algorithm --master-addr
    --master-port --max-cpu-loras --max-cudagraph-capture-size --max-log-len --max-logprobs
    --max-lora-cls-labels --max-lora-rank --max-loras --max-model-len --max-num-active-seqs
    --max-num-batched-tokens --max-num-queued-reqs --max-num-queued-tokens --max-num-scheduled-tokens
    --max-num-seqs --max-parallel-loading-workers --media-io-kwargs --middleware
    --mm-device-do-normalize --mm-encoder-attn-backend --mm-encoder-attn-dtype
    --mm-encoder-fp8-scale-path --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path
    --mm-encoder-only --mm-encoder-tp-mode --mm-hasher-algorithm --mm-ipc-gpu-memory-gb
    --mm-processor-cache-gb --mm-processor-cache-type --mm-processor-device --mm-processor-kwargs
    --mm-shm-cache-max-object-size-mb --mm-tensor-ipc --model --model-class-overrides --model-impl
    --model-loader-extra-config --moe-backend --nnodes --no-allow-credentials
    --no-allow-deprecated-quantization --no-async-scheduling --no-cohere-is-reasoning-model
    --no-cudagraph-metrics --no-data-parallel-external-lb --no-data-parallel-hybrid-lb
    --no-dcp-q-replicate --no-disable-cascade-attn --no-disable-chunked-mm-input
    --no-disable-custom-all-reduce --no-disable-fastapi-docs --no-disable-hybrid-kv-cache-manager
    --no-disable-nccl-for-dp-synchronization --no-disable-sliding-window --no-disable-uvicorn-access-log
    --no-enable-auto-tool-choice --no-enable-batch-sharded-sampling --no-enable-chunked-prefill
    --no-enable-cumem-allocator --no-enable-dbo --no-enable-elastic-ep --no-enable-ep-weight-filter
    --no-enable-eplb --no-enable-expert-parallel --no-enable-fault-tolerance
    --no-enable-flash-late-interaction --no-enable-flashinfer-autotune --no-enable-force-include-usage
    --no-enable-layerwise-nvtx-tracing --no-enable-log-deltas --no-enable-log-outputs
    --no-enable-log-requests --no-enable-logging-iteration-details --no-enable-lora
    --no-enable-mamba-cache-stochastic-rounding --no-enable-mamba-shared-prefix-checkpoint
    --no-enable-mfu-metrics --no-enable-mixed-moe-lora-format --no-enable-mm-embeds
    --no-enable-moe-shared-loras --no-enable-nccl-comm-suspend --no-enable-offline-docs
    --no-enable-per-request-metrics --no-enable-prefix-caching --no-enable-prompt-embeds
    --no-enable-prompt-tokens-details --no-enable-request-id-headers --no-enable-return-routed-experts
    --no-enable-scale-out --no-enable-server-load-tracking --no-enable-sleep-mode
    --no-enable-ssl-refresh --no-enable-tokenizer-info-endpoint --no-enable-tower-connector-lora
    --no-enable-trace-replay --no-enforce-eager --no-exclude-tools-when-tool-choice-none
    --no-fail-on-environ-validation --no-fully-sharded-loras --no-interleave-mm-strings
    --no-jit-monitor-verbose --no-kv-cache-metrics --no-kv-sharing-fast-prefill --no-language-model-only
    --no-log-error-stack --no-long-prefill-token-threshold-adaptive --no-mm-device-do-normalize
    --no-mm-encoder-only --no-numa-bind --no-ray-workers-use-nsight --no-return-sampling-mask
    --no-return-tokens-as-token-ids --no-scheduler-reserve-full-isl --no-skip-mm-profiling
    --no-skip-tokenizer-init --no-specialize-active-lora --no-swa-bounded-replay --no-tokens-only
    --no-trust-remote-code --no-trust-request-chat-template --no-trust-request-mm-kwargs
    --no-use-fp64-gumbel --no-use-replayssm --no-use-tqdm-on-load --node-rank --num-gpu-blocks-override
    --numa-bind --numa-bind-cpus --numa-bind-nodes --offload-backend --offload-group-size
    --offload-num-in-group --offload-params --offload-prefetch-step --optimization-level
    --otlp-traces-endpoint --override-generation-config --per-request-spec-decode-metrics
    --performance-mode --pipeline-parallel-size --pooler-config --port --prefill-context-parallel-size
    --prefill-schedule-interval --prefix-cache-retention-interval --prefix-caching-hash-algo
    --prefix-match-unit --profiler-config --pt-load-map-location --quantization --quantization-config
    --ray-workers-use-nsight --reasoning-config --reasoning-parser --reasoning-parser-plugin
    --renderer-num-workers --replayssm-buffer-len --response-role --return-sampling-mask
    --return-tokens-as-token-ids --revision --root-path --runner --safetensors-load-strategy
    --safetensors-prefetch-block-size --safetensors-prefetch-num-threads --scheduler-cls
    --scheduler-reserve-full-isl --scheduling-policy --seed --served-model-name
    --show-hidden-metrics-for-version --shutdown-timeout --skip-mm-profiling --skip-tokenizer-init
    --sleep-preserve-parameter-names --sparse-indexer-topk-backend --spec-method --spec-model
    --spec-tokens --specialize-active-lora --speculative-config --sse-keep-alive-interval --ssl-ca-certs
    --ssl-cert-reqs --ssl-certfile --ssl-ciphers --ssl-keyfile --stream-interval
    --structured-outputs-config --swa-bounded-replay --tensor-parallel-size --tokenizer --tokenizer-mode
    --tokenizer-revision --tokens-only --tool-call-parser --tool-parser-plugin --tool-server
    --tool-strict-level --trust-remote-code --trust-request-chat-template --trust-request-mm-kwargs
    --ubatch-size --uds --use-fp64-gumbel --use-replayssm --use-tqdm-on-load --uvicorn-log-level
    --video-pruning-method --video-pruning-rate --watermark --watermark-config --weight-transfer-config
    --worker-cls --worker-extension-cls
""".split())

# `vllm serve` flags that are neither AsyncEngineArgs nor FrontendArgs fields in vLLM 0.31.0 (dataclasses.fields of
# vllm/engine/arg_utils.py AsyncEngineArgs and vllm/entrypoints/launchers/cli_args.py FrontendArgs): Ray Serve LLM
# sorts engine_kwargs into those two and refuses any other key ("Unknown engine argument").
NOT_ENGINE_KWARGS = frozenset({"api_server_count", "config", "device_memory_utilization", "grpc", "headless", "help"})

# vllm/model_executor/models/registry.py: the `architectures` of a config.json vLLM 0.31 has a model class for.
# Generation (what `vllm serve` answers chat / completions with): _TEXT_GENERATION_MODELS, _MULTIMODAL_MODELS and
# _TRANSFORMERS_SUPPORTED_MODELS (260 names).
GENERATION_ARCHITECTURES = frozenset("""
    AXK1ForCausalLM AfmoeForCausalLM ApertusForCausalLM ArceeForCausalLM AriaForConditionalGeneration
    AudioFlamingo3ForConditionalGeneration BagelForConditionalGeneration BailingMoeForCausalLM
    BailingMoeV2ForCausalLM BailingMoeV2_5ForCausalLM BailingMoeV3ForCausalLM
    BailingMoeV3VLForConditionalGeneration BeeForConditionalGeneration Blip2ForConditionalGeneration
    BloomForCausalLM ChatGLMForConditionalGeneration ChatGLMModel Cohere2ForCausalLM Cohere2MoeForCausalLM
    Cohere2VisionForConditionalGeneration CohereAsrForConditionalGeneration
    CohereCompassForConditionalGeneration CohereForCausalLM Cosmos3EdgeForConditionalGeneration
    Cosmos3ForConditionalGeneration CwmForCausalLM DbrxForCausalLM DeciLMForCausalLM DeepseekForCausalLM
    DeepseekOCR2ForCausalLM DeepseekOCRForCausalLM DeepseekV2ForCausalLM DeepseekV32ForCausalLM
    DeepseekV3ForCausalLM DeepseekV41ForCausalLM DeepseekV4ForCausalLM DeepseekV4ForConditionalGeneration
    DeepseekVLV2ForCausalLM DiffusionGemmaForBlockDiffusion Dots3NoteForCausalLM DotsOCRForCausalLM
    Eagle2_5_VLForConditionalGeneration Emu3ForConditionalGeneration Ernie4_5ForCausalLM
    Ernie4_5_MoeForCausalLM Ernie4_5_VLMoeForConditionalGeneration Exaone4ForCausalLM
    Exaone4_5_ForConditionalGeneration ExaoneForCausalLM ExaoneMoeForCausalLM FalconForCausalLM
    FalconH1ForCausalLM FalconMambaForCausalLM FireRedASR2ForConditionalGeneration FlexOlmoForCausalLM
    FunASRForConditionalGeneration FunAudioChatForConditionalGeneration GLM4VForCausalLM GPT2LMHeadModel
    GPTBigCodeForCausalLM GPTJForCausalLM GPTNeoXForCausalLM Gemma2ForCausalLM Gemma3ForCausalLM
    Gemma3ForConditionalGeneration Gemma3nForCausalLM Gemma3nForConditionalGeneration Gemma4ForCausalLM
    Gemma4ForConditionalGeneration Gemma4UnifiedForConditionalGeneration GemmaForCausalLM Glm4ForCausalLM
    Glm4MoeForCausalLM Glm4MoeLiteForCausalLM Glm4vForConditionalGeneration Glm4vMoeForConditionalGeneration
    Glm5NextForCausalLM Glm5NextForConditionalGeneration GlmAsrForConditionalGeneration GlmForCausalLM
    GlmMoeDsaForCausalLM GlmOcrForConditionalGeneration GptOssForCausalLM
    Granite4VisionForConditionalGeneration GraniteForCausalLM GraniteMoeForCausalLM
    GraniteMoeHybridForCausalLM GraniteMoeSWAForCausalLM GraniteMoeSharedForCausalLM GraniteSWAForCausalLM
    GraniteSpeechForConditionalGeneration GraniteSpeechPlusForConditionalGeneration H2OVLChatModel
    HCXVisionV2ForCausalLM HYV3ForCausalLM HYV4ForCausalLM HfMoondream HrmTextForCausalLM
    HunYuanDenseV1ForCausalLM HunYuanMoEV1ForCausalLM HunYuanVLForConditionalGeneration HyperCLOVAXForCausalLM
    IQuestCoderForCausalLM IQuestLoopCoderForCausalLM Idefics3ForConditionalGeneration InklingForCausalLM
    InklingForConditionalGeneration InternLM2ForCausalLM InternLM3ForCausalLM InternS1ForConditionalGeneration
    InternS1ProForConditionalGeneration InternS2MobiusForConditionalGeneration
    InternS2PreviewForConditionalGeneration InternVLChatModel InternVLForConditionalGeneration
    IsaacForConditionalGeneration Jais2ForCausalLM JambaForCausalLM K2HorizonForCausalLM
    KananaVForConditionalGeneration KeyeForConditionalGeneration KeyeVL1_5ForConditionalGeneration
    KimiK25ForConditionalGeneration KimiK3ForConditionalGeneration KimiLinearForCausalLM
    KimiVLForConditionalGeneration LLaMAForCausalLM LagunaForCausalLM Lfm2ForCausalLM Lfm2MoeForCausalLM
    Lfm2VlForConditionalGeneration LightOnOCRForConditionalGeneration Llama4ForCausalLM
    Llama4ForConditionalGeneration LlamaForCausalLM Llama_Nemotron_Nano_VL LlavaForConditionalGeneration
    LlavaNextForConditionalGeneration LlavaNextVideoForConditionalGeneration
    LlavaOnevision2ForConditionalGeneration LlavaOnevisionForConditionalGeneration LongcatFlashForCausalLM
    LongcatFlashNgramForCausalLM Mamba2ForCausalLM MambaForCausalLM MellumForCausalLM MiDashengLMModel
    MiMoForCausalLM MiMoV2FlashForCausalLM MiMoV2ForCausalLM MiMoV2OmniForCausalLM MiniCPM3ForCausalLM
    MiniCPMForCausalLM MiniCPMO MiniCPMV MiniCPMV4_6ForConditionalGeneration MiniMaxM2ForCausalLM
    MiniMaxM3SparseForCausalLM MiniMaxM3SparseForConditionalGeneration Ministral3ForCausalLM
    Mistral3ForConditionalGeneration MistralForCausalLM MistralLarge3ForCausalLM MixtralForCausalLM
    Molmo2ForConditionalGeneration MolmoForCausalLM Moondream3ForCausalLM MoonshotKimiaForCausalLM
    MossAudioModel MossTranscribeDiarizeForConditionalGeneration MuseGlimmerForCausalLM
    MuseGlimmerForConditionalGeneration NVLM_D NanbeigeForCausalLM NemotronForCausalLM NemotronHForCausalLM
    NemotronHPuzzleForCausalLM NemotronH_Nano_Omni_Reasoning_V3 NemotronH_Nano_VL_V2
    NemotronH_Omni_Reasoning_V3 NemotronH_Super_Omni_Reasoning_V3 NemotronParseForConditionalGeneration
    OPTForCausalLM Olmo2ForCausalLM Olmo3ForCausalLM OlmoForCausalLM OlmoHybridForCausalLM OlmoeForCausalLM
    OpenCUAForConditionalGeneration OpenPanguVLForConditionalGeneration OpenVLAForActionPrediction
    OrionForCausalLM Ovis Ovis2_5 Ovis2_6ForCausalLM Ovis2_6_MoeForCausalLM
    PaddleOCRVLForConditionalGeneration PaliGemmaForConditionalGeneration PanguEmbeddedForCausalLM
    PanguProMoEV2ForCausalLM PanguUltraMoEForCausalLM Param2MoEForCausalLM Phi3ForCausalLM Phi3VForCausalLM
    Phi4ForCausalLMV Phi4MMForCausalLM PhiForCausalLM PhiMoEForCausalLM PixtralForConditionalGeneration
    Plamo3ForCausalLM QianfanOCRForConditionalGeneration Qwen2AudioForConditionalGeneration Qwen2ForCausalLM
    Qwen2MoeForCausalLM Qwen2VLForConditionalGeneration Qwen2_5OmniForConditionalGeneration Qwen2_5OmniModel
    Qwen2_5_VLForConditionalGeneration Qwen3ASRForConditionalGeneration Qwen3ASRRealtimeGeneration
    Qwen3ForCausalLM Qwen3MoeForCausalLM Qwen3NextForCausalLM Qwen3OmniMoeForConditionalGeneration
    Qwen3VLForConditionalGeneration Qwen3VLMoeForConditionalGeneration Qwen3_5ForCausalLM
    Qwen3_5ForConditionalGeneration Qwen3_5MoeForCausalLM Qwen3_5MoeForConditionalGeneration
    Qwen4ExpForCausalLM Qwen4ExpForConditionalGeneration RForConditionalGeneration Rnj1ForCausalLM
    SarvamMLAForCausalLM SarvamMoEForCausalLM SeedOssForCausalLM SkyworkR1VChatModel SmolLM3ForCausalLM
    SmolVLMForConditionalGeneration SolarForCausalLM StableLmForCausalLM Starcoder2ForCausalLM
    Step1ForCausalLM Step3TextForCausalLM Step3VLForConditionalGeneration Step3p5ForCausalLM
    Step3p7ForConditionalGeneration StepVLForConditionalGeneration TeleChat2ForCausalLM TeleChat3ForCausalLM
    TeleFLMForCausalLM UltravoxModel UnlimitedOCRForCausalLM VaultGemmaForCausalLM
    VibeVoiceAsrForConditionalGeneration VoxtralForConditionalGeneration VoxtralRealtimeGeneration
    WhisperForConditionalGeneration Zamba2ForCausalLM
""".split())

# _EMBEDDING_MODELS, _LATE_INTERACTION_MODELS, _REWARD_MODELS, _TOKEN_/_SEQUENCE_CLASSIFICATION_MODELS less the
# generation names: pooling models, no text generation (54 names).
POOLING_ARCHITECTURES = frozenset("""
    BertForMaskedLM BertForSequenceClassification BertForTokenClassification BertModel
    BertSpladeSparseEmbeddingModel BgeM3EmbeddingModel CLIPModel ColBERTJinaRobertaModel ColBERTLfm2Model
    ColBERTModernBertModel ColModernVBertForRetrieval ColPaliForRetrieval ColQwen3 ColQwen3_5
    DeepseekV3BidirectionalModel GPT2ForSequenceClassification Gemma2Model Gemma3TextModel GteModel
    GteNewForSequenceClassification GteNewModel HF_ColBERT InternLM2ForRewardModel
    JambaForSequenceClassification JinaEmbeddingsV5Model JinaForRanking JinaVLForRanking
    LlamaBidirectionalForSequenceClassification LlamaBidirectionalModel LlamaModel
    LlamaNemotronVLForSequenceClassification LlamaNemotronVLModel MistralModel
    ModernBertForSequenceClassification ModernBertForTokenClassification ModernBertModel NomicBertModel
    OpenAIPrivacyFilterForTokenClassification OpsColQwen3Model Qwen2ForProcessRewardModel Qwen2ForRewardModel
    Qwen2Model Qwen3ASRForcedAlignerForTokenClassification Qwen3VLNemotronEmbedModel RobertaForMaskedLM
    RobertaForSequenceClassification RobertaForTokenClassification RobertaModel SiglipModel Terratorch
    VoyageQwen3BidirectionalEmbedModel XLMRobertaForSequenceClassification XLMRobertaForTokenClassification
    XLMRobertaModel
""".split())

# _PREVIOUSLY_SUPPORTED_MODELS: architecture -> the last vLLM release that had it.
REMOVED_ARCHITECTURES = {
    "AquilaForCausalLM": "0.24.0", "AquilaModel": "0.24.0", "ArcticForCausalLM": "0.28.0",
    "AyaVisionForConditionalGeneration": "0.24.0", "BaiChuanForCausalLM": "0.23.0", "BaichuanForCausalLM":
    "0.23.0", "BambaForCausalLM": "0.23.0", "ChameleonForConditionalGeneration": "0.28.0", "Cheers": "0.28.0",
    "CheersForConditionalGeneration": "0.28.0", "DonutForConditionalGeneration": "0.10.2", "Dots1ForCausalLM":
    "0.23.0", "ErnieForSequenceClassification": "0.23.0", "ErnieForTokenClassification": "0.23.0",
    "ErnieModel": "0.23.0", "Fairseq2LlamaForCausalLM": "0.28.0", "FireRedLIDForConditionalGeneration":
    "0.28.0", "FuyuForCausalLM": "0.25.0", "GritLM": "0.28.0", "Grok1ForCausalLM": "0.24.0",
    "Grok1ModelForCausalLM": "0.24.0", "HCXVisionForCausalLM": "0.28.0", "InternLM2VEForCausalLM": "0.23.0",
    "InternLMForCausalLM": "0.23.0", "JAISLMHeadModel": "0.22.0", "MPTForCausalLM": "0.28.0",
    "MantisForConditionalGeneration": "0.24.0", "MiniMaxForCausalLM": "0.23.0", "MiniMaxM1ForCausalLM":
    "0.23.0", "MiniMaxText01ForCausalLM": "0.23.0", "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "MllamaForConditionalGeneration": "0.10.2", "MotifForCausalLM": "0.10.2", "MptForCausalLM": "0.28.0",
    "MusicFlamingoForConditionalGeneration": "0.24.0", "OuroForCausalLM": "0.26.0", "PersimmonForCausalLM":
    "0.25.0", "Phi3SmallForCausalLM": "0.9.2", "Phi4FlashForCausalLM": "0.10.2", "Phi4MultimodalForCausalLM":
    "0.12.0", "Plamo2ForCausalLM": "0.26.0", "PrithviGeoSpatialMAE": "0.28.0", "QWenLMHeadModel": "0.23.0",
    "QwenVLForConditionalGeneration": "0.23.0", "RWForCausalLM": "0.28.0", "StableLMEpochForCausalLM":
    "0.28.0", "Tarsier2ForConditionalGeneration": "0.23.0", "TarsierForConditionalGeneration": "0.24.0",
    "TeleChatForCausalLM": "0.25.0", "XverseForCausalLM": "0.23.0"
}
