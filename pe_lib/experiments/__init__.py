"""The book's training toys: small models trained in a chapter, on data shipped with pe_lib.

* :mod:`~pe_lib.experiments.toy`: a toy task where order matters, and a one-layer causal
  Transformer to learn it;
* :mod:`~pe_lib.experiments.lm`: a small character-level language model on real text (the text
  is ``data/python_reference.txt``): train short, test long;
* :mod:`~pe_lib.experiments.content_positions`: positions that depend on the content (CoPE,
  the forgetting transformer, PaTH), on the toy task.
"""
