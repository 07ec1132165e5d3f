"""What the GPU computes, value by value: no scheduler, no kernel, only the answers an instruction gives.

Held to an H200 by ``tests/interp/silicon`` (the shared semantics of Hopper and Blackwell); the interpreter
(:mod:`gluon_overlap.interp`) calls it for every element it computes.

* :mod:`.numerics`     -- element arithmetic on torch tensors in register form: IEEE rounding done once, fused
  FMA, canonical NaNs, ``.ftz`` where the instruction flushes, PTX min / max, the answers of integer operations C
  leaves undefined, ``cvt`` saturation
* :mod:`.arith`        -- Triton's typing of each operation (its own ``computation_type_impl``) before
  :mod:`.numerics` computes it
* :mod:`.linear`       -- a layout's linear layout, asked from Triton's C++
* :mod:`.reduce_order` -- reductions and scans combined in the order the compiled kernel combines them
"""
