"""What a model does with positions: attention, its inputs at inference, and a model's
configuration read and described.

* :mod:`~pe_lib.models.attention`: single-head scaled dot-product self-attention;
* :mod:`~pe_lib.models.llama`: a Llama-architecture decoder rotating with pe_lib's RoPE;
* :mod:`~pe_lib.models.inference`: a key-value cache, left-padded batches and packed rows;
* :mod:`~pe_lib.models.sinks`: attention sinks and a streaming cache;
* :mod:`~pe_lib.models.grid`: positions on an image's grid, and text mixed with images;
* :mod:`~pe_lib.models.config_reader`: a ``config.json`` read as transformers fills it in;
* :mod:`~pe_lib.models.layer_pattern`: which layers see positions, and how;
* :mod:`~pe_lib.models.temperature`: attention temperatures tied to length;
* :mod:`~pe_lib.models.description`: all of that, layer by layer, for one configuration
  (``pe_lib.describe``).
"""
