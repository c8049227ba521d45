"""Rotary position embedding (RoPE) and what extends it.

* :mod:`~pe_lib.rope.formula`: the formula, top to bottom: theta, the angles, the rotation in
  both channel layouts, partial rotation, scaling; :func:`apply_rope`;
* :mod:`~pe_lib.rope.module`: :class:`RotaryEmbedding`, the module that rotates queries and
  keys at a decoding offset, from a cache of cos and sin;
* :mod:`~pe_lib.rope.scaling`: the frequencies, plain and scaled for context extension
  (:func:`rope_frequencies`, one registry of scalings, one contract);
* :mod:`~pe_lib.rope.axial`: several coordinates per token (images, video), each frequency pair
  turned by one of them;
* :mod:`~pe_lib.rope.fast`: the same rotation written block by block on the CPU, and the kept
  frequencies (the formula's one dispatch chooses it).
"""

from .formula import apply_rope, rope_angles, rotate
from .module import RotaryEmbedding
from .scaling import rope_frequencies

__all__ = ["RotaryEmbedding", "apply_rope", "rope_angles", "rope_frequencies", "rotate"]
