"""What the model sees of the sources, and how its citations come back out.

The model never sees internal ids: each answer gets a registry of low-entropy aliases (``c1`` a chunk,
``w1`` a web page, ``d1`` a document, ``b1`` a knowledge base). Citations the model writes as
``<ref id="c1"/>`` are expanded on the way out; anything it cannot back by a registered chunk or web
page is dropped (fail closed), so a model cannot forge a source.
"""

from ragline.modelcontext.citations import StreamDecoder, expand_text, fold_citations
from ragline.modelcontext.registry import SourceRegistry

__all__ = ["SourceRegistry", "StreamDecoder", "expand_text", "fold_citations"]
