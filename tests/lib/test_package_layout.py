"""pe_lib's tree is its architecture: what each subpackage may import, what ``import pe_lib``
loads, the names it keeps for homework code, and a core install without the extras.

The import graph is read from the sources (an ``ast`` walk over every module, imports inside
functions included), so a new module is checked with no other edit.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import pe_lib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pe_lib"

#: ``pe_lib.__all__`` before the package was split into subpackages: the contract homework code
#: and the chapters rely on (``from pe_lib import ...``).
PUBLIC_NAMES = (
    "KVCache", "LayerPositions", "LearnedPositionalEncoding", "PositionalEncoding",
    "RotaryEmbedding", "SelfAttention", "SinusoidalPositionalEncoding", "__version__",
    "alibi_bias", "alibi_slopes", "angular_frequencies", "apply_rope", "attention_temperature",
    "axial_angles", "axial_frequencies", "causal_mask", "checks", "clipped_relative_positions",
    "describe", "encodings", "grid_positions", "layer_pattern", "mrope_positions",
    "packed_causal_mask", "packed_positions", "position_ids_from_mask", "read_config",
    "relative_shift_matrix", "resize_position_table", "rope_angles", "rotate", "run_cached",
    "scaled_dot_product_attention", "sinusoidal_table", "softmax_with_sinks", "streaming_cache",
    "t5_relative_buckets", "wavelengths",
)  # fmt: skip
#: ``pe_lib.rope.__all__``, ``pe_lib.encodings.__all__`` and ``pe_lib.checks.__all__`` then.
KEPT_NAMES = {
    "pe_lib.rope": ("RotaryEmbedding", "apply_rope", "rope_angles", "rope_frequencies", "rotate"),
    "pe_lib.encodings": (
        "ENCODINGS", "PROPERTIES", "AdditiveFactory", "Encoding", "RotationFactory", "ScoreBias",
        "register",
    ),
    "pe_lib.checks": (
        "LANGUAGES", "Catalogue", "CheckFailed", "Mistake", "Note", "check_alibi_bias",
        "check_alibi_slopes", "check_flat", "check_kv_cache", "check_positional_encoding_module",
        "check_relative_shift", "check_rope", "check_sinusoidal_table", "get_language",
        "set_language",
    ),
}  # fmt: skip

#: The top-level modules every layer may import (argument checks, dtypes, the version,
#: printed digits), then the subpackages, each above those it imports.
HELPERS = ("_validation", "_precision", "_version", "digits")
LAYERS = ("rope", "encodings", "models", "experiments", "checks", "pretrained", "viz")
#: Imported only by the entry points and on first use, and what each needs beyond the core.
EXTRAS = {
    "viz": ("matplotlib", "altair", "ipywidgets"),
    "pretrained": ("gguf", "safetensors", "tokenizers"),
}
ON_DEMAND = ("pe_lib.experiments", "pe_lib.pretrained", "pe_lib.viz")


def test_every_public_name_is_still_importable_from_pe_lib() -> None:
    assert set(PUBLIC_NAMES) <= set(pe_lib.__all__)
    for name in PUBLIC_NAMES:
        assert getattr(pe_lib, name) is not None, name


@pytest.mark.parametrize("module", sorted(KEPT_NAMES))
def test_the_packages_homework_imports_from_keep_their_names(module: str) -> None:
    imported = importlib.import_module(module)
    assert set(KEPT_NAMES[module]) <= set(imported.__all__)
    for name in KEPT_NAMES[module]:
        assert getattr(imported, name) is not None, f"{module}.{name}"


# --- the import graph -------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (ROOT / relative).with_suffix(".py").is_file() or (
        ROOT / relative / "__init__.py"
    ).is_file()


def _edges() -> list[tuple[str, str, tuple[str, ...], int]]:
    """``(importer, imported module, names, line)`` for every import of pe_lib inside pe_lib;
    ``from . import fast`` counts as an import of the module ``pe_lib.rope.fast``."""
    edges = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module_name(path)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "pe_lib":
                        edges.append((importer, alias.name, (), node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "pe_lib":
                    continue
                names = tuple(alias.name for alias in node.names)
                submodules = [n for n in names if _is_module(f"{target}.{n}")]
                for name in submodules:
                    edges.append((importer, f"{target}.{name}", (), node.lineno))
                rest = tuple(n for n in names if n not in submodules)
                if rest or not submodules:
                    edges.append((importer, target, rest, node.lineno))
    return edges


def _part(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to: ``pe_lib.rope.fast`` -> rope."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_walk_sees_the_imports_it_judges() -> None:
    edges = {(a, b) for a, b, _, _ in _edges()}
    assert ("pe_lib.rope.formula", "pe_lib.rope.fast") in edges
    assert ("pe_lib.models.inference", "pe_lib.models.llama") in edges
    assert ("pe_lib.checks.flat", "pe_lib.experiments.lm") in edges  # inside a function
    assert ("pe_lib.viz.charts", "pe_lib.rope.scaling") in edges


def test_the_layers_name_every_subpackage() -> None:
    tops = {_part(_module_name(p)) for p in PACKAGE.rglob("*.py")} - {"", "__main__"}
    assert tops == set(HELPERS) | set(LAYERS)


def test_no_private_name_crosses_a_subpackage() -> None:
    crossings = []
    for importer, target, names, line in _edges():
        if _part(importer) in ("", "__main__") or _part(importer) == _part(target):
            continue
        inner = target.split(".")[2:]  # below the subpackage: pe_lib.checks._core -> _core
        private_module = _part(target) not in HELPERS and any(p.startswith("_") for p in inner)
        private_names = [n for n in names if n.startswith("_")]
        if private_module or private_names:
            crossings.append(f"{importer}:{line} imports {target} {private_names}")
    assert not crossings, crossings


def test_no_import_points_up_the_layers() -> None:
    rank = {**dict.fromkeys(HELPERS, -1), **{name: i for i, name in enumerate(LAYERS)}}
    upward = []
    for importer, target, _, line in _edges():
        source, destination = _part(importer), _part(target)
        if source in ("", "__main__") or destination == "" or source == destination:
            continue
        if source == "digits" and destination == "_validation":
            continue  # helpers among themselves
        if rank[destination] >= rank[source]:
            upward.append(f"{importer}:{line} -> {target}")
    assert not upward, upward


def test_help_shows_the_tree_with_every_module_once() -> None:
    """The tree in ``pe_lib``'s docstring (``help(pe_lib)``) against the files."""
    doc = pe_lib.__doc__ or ""
    tree = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    listed, package = [], ""
    for line in tree.splitlines():
        entry = line.split()[0]
        if line.startswith("        "):
            listed.append(f"{package}.{entry}")
        elif entry.endswith("/"):
            package = entry.rstrip("/")
            listed.append(package)
        else:
            listed.extend(name.strip(",") for name in line.strip().split("  ")[0].split())
    modules = {
        _module_name(p).removeprefix("pe_lib.").replace(".__init__", "")
        for p in PACKAGE.rglob("*.py")
        if p.parent.name != "checks" or p.name == "__init__.py"
    } - {"pe_lib", "__main__", "_version"}
    assert sorted(listed) == sorted(set(listed)), "a module is listed twice"
    assert set(listed) == modules


# --- what `import pe_lib` loads ----------------------------------------------------------------

_LOADED = """
import json, sys
import pe_lib
before = sorted(m for m in sys.modules if m.startswith("pe_lib"))
extras = sorted(m for m in sys.modules if m.split(".")[0] in {extras})
pe_lib.viz  # imported on first use
print(json.dumps([before, extras, "pe_lib.viz" in sys.modules]))
"""


def test_import_pe_lib_loads_no_weight_fetcher_chart_or_plot() -> None:
    names = sorted({n for needs in EXTRAS.values() for n in needs} | {"transformers"})
    result = subprocess.run(
        [sys.executable, "-c", _LOADED.replace("{extras}", repr(set(names)))],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    loaded, extras, viz_on_demand = json.loads(result.stdout.splitlines()[-1])
    assert not [m for m in loaded if m.startswith(ON_DEMAND)], loaded
    assert "pe_lib.rope.fast" in loaded and "pe_lib.checks.rope" in loaded
    assert extras == []
    assert viz_on_demand


# --- the core alone, in a fresh environment ----------------------------------------------------

#: A homework session: each checker given pe_lib's own answer, then one wrong answer explained
#: in Korean; then which modules of the extras were imported, and which are installed at all.
SESSION = """
import importlib.util, json, sys
import torch
import pe_lib
from pe_lib import alibi_slopes, apply_rope, relative_shift_matrix, sinusoidal_table
from pe_lib.checks import (
    CheckFailed, check_alibi_slopes, check_flat, check_positional_encoding_module,
    check_relative_shift, check_rope, check_sinusoidal_table, set_language,
)

check_sinusoidal_table(sinusoidal_table(64, 16))
check_relative_shift(relative_shift_matrix)
check_alibi_slopes(alibi_slopes)
check_rope(apply_rope)
check_positional_encoding_module(pe_lib.SinusoidalPositionalEncoding)
flat = torch.full((3, 4), 5.0) + torch.rand(3, 4) * 0.01
check_flat(flat, seeds=[0, 1, 2], lengths=[64, 128, 256, 512])
set_language("ko")
try:
    check_sinusoidal_table(sinusoidal_table(64, 16).flip(0))
    explained = ""
except CheckFailed as failure:
    explained = str(failure)
extras = EXTRAS
print(json.dumps({
    "explained": explained,
    "imported": sorted(m for m in sys.modules if m.split(".")[0] in extras),
    "installed": sorted(n for n in extras if importlib.util.find_spec(n) is not None),
    "pe_lib": pe_lib.__file__,
}))
"""


@pytest.mark.integration
def test_the_core_installs_alone_and_runs_the_checkers(tmp_path: Path) -> None:
    """torch and numpy, then pe_lib without extras, in a new virtual environment: the
    checkers run, and nothing of an extra is installed or imported."""
    env_dir = tmp_path / "core"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    python = env_dir / "bin" / "python"
    torch_pin = re.search(r"^torch==\S+", (ROOT / "requirements.txt").read_text(), re.M)
    assert torch_pin is not None
    for args in ([torch_pin.group(0), "numpy"], [str(ROOT)]):
        result = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *args],
            capture_output=True,
            text=True,
            check=False,
            env=clean,
        )
        assert result.returncode == 0, result.stderr[-2000:]
    extras = sorted({n for needs in EXTRAS.values() for n in needs} | {"transformers"})
    result = subprocess.run(
        [str(python), "-c", SESSION.replace("EXTRAS", repr(extras))],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=clean,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert Path(report["pe_lib"]).is_relative_to(env_dir), report["pe_lib"]
    assert "pe_lib.sinusoidal_table" in report["explained"]  # the Korean fix names the reference
    assert report["imported"] == [] and report["installed"] == []
