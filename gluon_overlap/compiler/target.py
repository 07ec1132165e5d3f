"""The machine the interpreter checks a kernel against: sm_100a's per-CTA limits (no kernel of ours in here).

A launch the compiler would refuse for these limits is refused before it runs (:mod:`gluon_overlap.compiler.precheck`).
"""

#: the most dynamic shared memory one CTA may use on sm_100 / sm_103 (227 KB; the SM has 228 KB,
#: 1 KB of which the system reserves per CTA)
SMEM_PER_CTA_LIMIT = 232_448
#: tensor memory per CTA: 128 lanes x 512 columns of 32 bits
TMEM_LANES = 128
TMEM_COLUMNS = 512
