"""pe_book: the numeric and symbolic code of the book *Positional Encoding in Transformers*.

One module per idea; each chapter imports what it shows:

- ``pe_book.attention``  scaled dot-product attention, single- and multi-head (ch. 01)
- ``pe_book.symmetry``   permutations and the symmetry attention cannot break (ch. 01)
- ``pe_book.symbolic``   SymPy helpers shared by the proofs
- ``pe_book.claims``     the registry of the sources' claims, their evidence (one module per
                         topic: ``pe_book.claims.symmetry`` ... ``.cost``) and verdicts
- ``pe_book.results``    the committed study and cost results as typed records (ch. 09, 10)
- ``pe_book.exercises``  checkers for the exercises
- ``pe_book.plotting``   the book's figure style
- ``pe_book.seed``       deterministic cells
"""

__version__ = "0.1.0"
