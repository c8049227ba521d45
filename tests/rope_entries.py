"""Published ``config.json`` rope entries, written once for the tests that use them
(``tests/lib/test_rope_scaling.py`` and ``tests/lib/test_rope_parity.py``).

Each is the entry as the model ships it, without ``rope_theta`` (which most configs keep at the
top level); the comment gives the model's base and head size.
"""

from __future__ import annotations

#: meta-llama/Llama-3.1-8B, "rope_scaling" (rope_theta 500000, head_dim 4096 / 32 = 128).
LLAMA31 = {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}
#: Qwen2.5's recommended YaRN entry for 128K context (rope_theta 1e6, head_dim 128).
QWEN25_YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
#: deepseek-ai/DeepSeek-V3, "rope_scaling" (rope_theta 10000, qk_rope_head_dim 64).
DEEPSEEK_V3_YARN = {
    "beta_fast": 32,
    "beta_slow": 1,
    "factor": 40,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096,
    "type": "yarn",
}
#: openai/gpt-oss-20b, "rope_scaling": YaRN with the ramp's ends unrounded (truncate false)
#: (rope_theta 150000, head_dim 64).
GPT_OSS_YARN = {
    "beta_fast": 32.0,
    "beta_slow": 1.0,
    "factor": 32.0,
    "original_max_position_embeddings": 4096,
    "rope_type": "yarn",
    "truncate": False,
}
