"""Figures: matplotlib for the printed book, Vega-Lite for the browser, an explorer widget.

* :mod:`~pe_lib.viz.style`: one colour, one dash and one name per method, for every figure;
* :mod:`~pe_lib.viz.plotting`: the chapters' matplotlib figures;
* :mod:`~pe_lib.viz.charts`: figures that recompute in the reader's browser, with no kernel;
* :mod:`~pe_lib.viz.widgets`: an interactive explorer of the sinusoidal encoding.

Needs the ``viz`` extra (``pip install pe_lib[viz]``: matplotlib, altair, and for the explorer
ipywidgets); ``import pe_lib`` does not load this subpackage.
"""
