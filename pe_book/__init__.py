"""pe_book: the numeric and symbolic code of the book *Positional Encoding in Transformers*.

One module per idea; each chapter imports what it shows. Every module, with the
chapter (ch.) that introduces it:

Foundations
- ``pe_book.attention``     scaled dot-product attention, the qkv/head split, where the
                            queries start (ch. 01; used by every method)
- ``pe_book.symmetry``      permutations and the symmetry attention cannot break (ch. 01)
- ``pe_book.taylor``        the Taylor expansion of a read-out in two positions (ch. 02)
- ``pe_book.symbolic``      SymPy helpers shared by the proofs (ch. 01-07, 09)
- ``pe_book.diagnostics``   measurements of score matrices: how relative is a score (ch. 02, 04)
- ``pe_book.decay``         how the dot product of two encodings decays with distance (ch. 05)

Position methods (each registers itself with ``pe_book.positions``)
- ``pe_book.positions``     the interface a method implements and the registry by name that
                            the model builds from (ch. 11)
- ``pe_book.sinusoidal``    the sinusoidal table, its frequencies and layouts (ch. 03, 04)
- ``pe_book.learned``       learned absolute positions (ch. 06)
- ``pe_book.relative``      Shaw et al.'s and T5's relative positions (ch. 06)
- ``pe_book.rope``          rotary position embedding (ch. 07)
- ``pe_book.rope_kernel``   RoPE's fused C loop (``_rope_kernel.c``), when it is built (ch. 12)
- ``pe_book.rope_scaling``  RoPE's context-extension schemes: PI, NTK, YaRN, Llama 3,
                            LongRoPE, partial rotary (ch. 08)
- ``pe_book.rope_interpolation`` why Position Interpolation works: RoPE's score between
                            the integers, fitted, and Chen et al.'s bound on it (ch. 08)
- ``pe_book.alibi``         ALiBi's slopes and bias, materialised or fused (ch. 09, 12)
- ``pe_book.bias_attention`` causal attention reading a bias per offset inside a C kernel
                            (``_bias_attention.c``): ALiBi, T5, KERPLE, FIRE, Shaw (ch. 12)

Methods that change what position means (ch. 10; chapter 11's study trains each of them,
``python -m pe_book.study``, NoPE as the position method ``none``)
- ``pe_book.nope``          how a causal decoder without positions recovers them (NoPE)
- ``pe_book.kerple``        KERPLE's logarithmic and power kernels as score biases
- ``pe_book.fire``          FIRE: a learned function of the progressively normalised offset
- ``pe_book.xpos``          xPos: RoPE with a per-pair exponential decay
- ``pe_book.cope``          CoPE: positions that count what the gates let through
- ``pe_book.randomized``    randomized positions: sorted samples from a longer range
- ``pe_book.p_rope``        p-RoPE: only the fastest pairs rotate

Position in today's open models (ch. 13)
- ``pe_book.mrope``         M-RoPE: three position components for text, images and video
- ``pe_book.irope``         iRoPE (Llama 4): NoPE layers among RoPE layers, temperature tuning
- ``pe_book.mla``           Multi-head Latent Attention's decoupled RoPE (DeepSeek-V2)
- ``pe_book.sinks``         attention sinks: StreamingLLM's cache and a learned sink logit
- ``pe_book.open_models``   the families' position choices, quoted and read from transformers

The model, the studies and their results
- ``pe_book.model``         the character LM whose only varying part is its position method
                            (ch. 11, 12)
- ``pe_book.data``          the corpus (CPython's standard library, pinned) and the quoted data
                            (``claims.toml``, ``papers.toml``, ``glossary.toml``) (ch. 11)
- ``pe_book.study``         train short, test long: the extrapolation study (ch. 11;
                            ``python -m pe_book.study``)
- ``pe_book.evaluation``    how a trained model is scored: windows, sliding windows,
                            perplexity, RoPE's scalings (ch. 11)
- ``pe_book.tasks``         the algorithmic tasks: copy, reverse, addition with exact answers
                            (ch. 11; ``python -m pe_book tasks``)
- ``pe_book.cost``          the time and memory of every method (ch. 12; ``python -m pe_book.cost``)
- ``pe_book.results``       the committed study results as typed records (ch. 11, 13)
- ``pe_book.intervals``     intervals and verdicts of the study, fixed before its runs (ch. 11)
- ``pe_book.report``        the study's tables and sentences, computed from its results
                            (ch. 10, 11, 14)
- ``pe_book.paired``        one method against the one whose failure it answers, paired on
                            seeds and characters (ch. 10)
- ``pe_book.experiments``   the two study commands under their first name
- ``pe_book.measure``       timing in turns, the profiler's allocations, compiled buffers
                            (ch. 12)
- ``pe_book.bench``         the RoPE and ALiBi benchmarks and their speed targets (ch. 12;
                            ``python -m pe_book.bench``)
- ``pe_book.cli``           one command line for all of them: ``python -m pe_book study``,
                            ``tasks``, ``cost``, ``bench`` (ch. 11, 12)

The book around the code
- ``pe_book.claims``        the registry of the sources' claims, their evidence (one module per
                            topic: ``pe_book.claims.symmetry`` ... ``.cost``) and verdicts
                            (every chapter; the summary in ch. 14)
- ``pe_book.papers``        numbers quoted from papers, with paper and table
                            (ch. 03, 05, 09, 11, 12)
- ``pe_book.exhibits``      other people's buggy sinusoidal tables, kept to be dissected (ch. 03)
- ``pe_book.glossary``      the bilingual glossary (ch. 14)
- ``pe_book.exercises``     the exercise checkers: a grading framework and one module per
                            chapter (``pe_book.exercises.ch01_symmetry`` ... ``.ch14_review``)
- ``pe_book.grade``         grades submitted chapters in fresh kernels, comparing outside the
                            student's process (``python -m pe_book grade``; ch. 01-14)
- ``pe_book.plotting``      the book's figure style and its recurring figures, drawn from arrays
- ``pe_book.reading``       shows readers the code a chapter relies on (ch. 02)
- ``pe_book.seed``          deterministic cells
- ``pe_book.lecture``       how long a chapter takes to present, from its words and live
                            cells (ch. 00's lecture plan)
- ``pe_book.problems``      written problems with worked answers and points, three to five
                            per chapter (ch. 01-14), and an exam bank (the instructor guide)
- ``pe_book.syllabus``      course plans of 6 to 14 weeks, each lecture timed from the
                            chapters' sections (ch. 01-14; the instructor guide)
- ``pe_book.workload``      what a plan asks of a student each week (reading, exercises,
                            problems, assignments, within a bound) and what it leaves out
                            (ch. 01-14; the instructor guide)
- ``pe_book.guide``         the instructor guide's tables from the plans: what each plan
                            leaves out, assignment load and CPU budgets (ch. 01-14)

Private helpers: ``pe_book._validate`` (argument checks with clear errors),
``pe_book._toml`` (the one reader of the TOML data), ``pe_book._registry`` (lookup
by name for claims, papers and position methods) and ``pe_book._cached_table``
(the grown-on-demand table under the sinusoidal encoding and RoPE).
"""

__version__ = "0.1.0"
