"""Hints on request, in three tiers -- printed only when a learner asks (the solutions: :mod:`.catalog`).

``hint(title)`` prints the next tier for that exercise each time it is called: a **nudge** (where to look), the
**concept** (the rule that decides it), the **recipe** (the steps, in words -- still not the code).  ``hint(title,
3)`` jumps to a tier.
"""

from __future__ import annotations

TIERS = ("nudge", "concept", "recipe")

#: title -> (nudge, concept, recipe)
HINTS: dict[str, tuple[str, str, str]] = {
    "02 scale byte offset": (
        "Find the 512-byte chunk first; then place the scale inside the chunk. Rows 0 and 1 of a chunk are not "
        "neighbours in memory.",
        "A chunk holds 128 rows x 4 k-scales. Its 16-byte lane l holds four rows 32 apart (l, 32 + l, 64 + l, "
        "96 + l): a row's position inside the chunk depends on row % 32 (which lane) and on (row % 128) // 32 "
        "(which 4-byte group in the lane). The chunks are laid out row-major over (row block, k block), and a row "
        "block has as many chunks as ceil(scale_k / 4).",
        "chunk = (row // 128) * ceil(scale_k / 4) + k // 4; the byte is chunk * 512 + 16 * (row % 32) + "
        "4 * ((row % 128) // 32) + k % 4.",
    ),
    "02 scale TMEM column": (
        "Which chunk a scale is in decides the first column; what else decides the column inside the chunk? And "
        "a lane is not one place: warpx4 writes four.",
        "tcgen05.cp 32x128b.warpx4 writes a chunk's 32 lanes x 16 bytes into 4 columns of each of the four 32-lane "
        "sub-partitions; each 4-byte group of a lane is one 32-bit cell, so the row group (row % 128) // 32 becomes "
        "the column inside the chunk, and the 4 k-scales of a row share that one cell.",
        "first = plan.a_scale_column(k // 4) for A, plan.b_scale_column(row // 128, k // 4) for B; column = first + "
        "(row % 128) // 32; lanes = row % 32 + 32 * w for w in 0..3.",
    ),
    "08 expect bytes": (
        "expect counts what lands in *this* CTA's shared memory in one K step, not the pair's.",
        "Each CTA holds its own 128 rows of A and of B (the CGA layout splits them), its own 128-row A-scale "
        "chunks, and the *whole* B-scale tile (it is duplicated: the lead multicasts it). fp4 rows are K/2 bytes, "
        "fp8 rows K bytes; a packed scale chunk is 512 bytes per 128 rows and 4 k-scales.",
        "128 * row_bytes(A) + 128 * row_bytes(B) + (BLOCK_K / (4 * VEC)) * 512 + (BLOCK_N / 128) * "
        "(BLOCK_K / (4 * VEC)) * 512, with BLOCK_K, BLOCK_N and VEC from the plan you are given (plan.block_k, "
        "plan.block_n, plan.vec_size): nothing in it depends on the BLOCK_K the package ships.",
    ),
    "03a K loop": (
        "Each K step reuses the same shared memory and the same accumulator: what must have happened before the "
        "MMA may read the stage, and before the next step's TMA may overwrite it?",
        "load_bar completes once per K step, when both CTAs' bytes have landed (expect = one arrival plus a byte "
        "count that the TMA pays off); mma_bar completes when the MMA and everything issued before it are done. "
        "Completion m of a barrier has parity (m - 1) % 2 and both complete once per step. The coordinates are "
        "those of the pair's box: rows off_m / off_n, K in bytes for the operands (fp4: two elements a byte), and "
        "in 4-scale chunks for the scales (their second coordinate counts 128-row blocks).",
        "per step: expect(load_bar, stage_bytes); four async_loads (A, B, A scales, B scales) with multicast; wait "
        "load_bar; copy the two scale tiles into their TMEM slots; the block-scaled MMA, accumulating from the "
        "second step, committing to mma_bar; wait mma_bar; flip the parity.",
    ),
    "03a epilogue": (
        "Four things per subtile: TMEM to registers, registers to shared memory, shared memory to C, and making "
        "sure nobody reuses a buffer another engine is still reading.",
        "A slice of TMEM needs compile-time start and width: the subtile's column must be a constexpr. The TMA "
        "store reads c_smem asynchronously: before you overwrite it, wait until no store is in flight; the TMA "
        "engine must also see the registers' writes (a fence); and the kernel must not end with a store in flight.",
        "for each step (static_range): load the subtile at drain_column(TMEM_PLAN, 0, step); store_wait(0); store "
        "it into c_smem as c_desc.dtype; fence_async_shared(); async_store at [off_m, off_n + that column]; after "
        "the loop, store_wait(0).",
    ),
    "03b descriptors": (
        "Every box is written for the *pair* (256 rows), and every layout says how the pair splits it.",
        "NVMMASharedLayout.get_default_for(box, dtype, fp4_padded=..., cga_layout=...) picks the swizzle; the CGA "
        "layout [[1, 0]] splits the first dimension over the two CTAs. fp4 is two elements a byte, except next to "
        "an fp8 operand, where it is loaded padded (fp4_padded). Scales are 5-D views (1, REP_MN, REP_K, 2, 256) "
        "of the packed chunks, copied unswizzled: A's row-block dimension is split, B's is whole in both CTAs.",
        "A and B: boxes [256 or block_n, block_k (// 2 for fp4)], uint8 for fp4, float8e4nv for fp8; C: [256, "
        "epilogue_block_n] float16; scales: NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5) with "
        "cga_layout [[0, 1, 0, 0, 0]] for A and [[0, 0, 0, 0, 0]] for B, boxes [1, 2, block_k // (4 * vec), 2, 256].",
    ),
    "03b find the bug": (
        "Read the report: which barrier, which parity, how many phases had completed?",
        "Both barriers complete once per K step; waiting for completion m needs parity (m - 1) % 2.",
        "One of the two waits asks for the other parity than the phase the step completes: make it the same "
        "`phase` as the other wait.",
    ),
    "04 drain order": (
        "Which end of each window is the shared one?",
        "The left window [0, 256) shares its *high* columns with the right one; the right window shares its *low* "
        "columns. Every subtile that holds one shared column must come before every other.",
        "even tiles (left window): high to low; odd tiles (right window): low to high.",
    ),
    "04 early release": (
        "After which drain step has the last shared column been read, if the shared columns are drained first?",
        "The shared columns are the first overlap_cols columns the drain reads; drain step s reads columns "
        "[s * EPILOGUE_BLOCK_N, (s + 1) * EPILOGUE_BLOCK_N) of that order.",
        "(overlap_cols - 1) // epilogue_block_n.",
    ),
    "04 release": (
        "Tile i's first MMA overwrites columns tile i - 1 still holds: which ones, and who must have read them?",
        "Both CTAs drain their half of tile i - 1; the lead issues the MMA. The overlap barrier is pair-scoped "
        "(both CTAs arrive on the lead's copy) and completes once per tile; tile 0 has nothing to wait for, and a "
        "fresh barrier counts parity 1 as complete.",
        "if i > 0: drain steps 0 ... HEAD - 1 of tile i - 1 (drain_steps, tile parity (i - 1) % 2), then one arrive "
        "on overlap_bar; then, for every tile, wait for completion i: parity (i + 1) % 2.",
    ),
    "04 find the bug": (
        "The hazard names the write and the read that collide: which columns, and which drain steps had run?",
        "The head must contain every subtile that holds a shared column: early_release_subtile is the *last* drain "
        "step of the head, counted from 0.",
        "HEAD is early_release_subtile + 1 (the head is steps 0 ... early_release_subtile, inclusive).",
    ),
    "05 barrier scopes": (
        "Who waits on each barrier, and who arrives on it?",
        "A barrier the lead must wait on before it issues (because the other CTA's work must be done too) is one "
        "copy in the lead, pair-scoped: its init count is per CTA, so the lead's copy needs twice the count, one "
        "arrival from each CTA. A barrier a multicast commit arrives on is per CTA: one arrival in each CTA's copy.",
        "load_ready, acc_empty, overlap: pair, 2 arrivals; load_empty, acc_ready: cta, 1 arrival.",
    ),
    "05 Counter walk": (
        "How many uses before the index comes back to 0, and what changes then?",
        "Use j picks barrier j % n; each wrap flips the parity, starting from the start phase.",
        "(j % n, start ^ ((j // n) & 1)).",
    ),
    "05 Counter": (
        "next() returns a new Counter: what changes after one use, and what changes when the index wraps? What "
        "should happen when pred is false?",
        "The index counts uses modulo num_barriers; the parity flips every time it wraps; with pred false nothing "
        "moves. Values are runtime tensors: choose with gl.where, not with a Python if.",
        "incr = index + (1 if pred else 0) via gl.where; rollover = incr == num_barriers; index = 0 on rollover, else "
        "incr; phase flipped on rollover.",
    ),
    "05 load partition": (
        "The load warp is a producer: what does it wait for before it refills a stage, and what does it tell the "
        "MMA warp?",
        "Its Counter walks the ring of load_empty barriers; the slots start out empty, so the first lap must pass "
        "at once (a producer starts at phase 1). Each stage is announced on load_ready[s] with expect (one arrival "
        "plus the bytes); the coordinates are the tile's (pid_m, pid_n) and the K step's, as in notebook 03a.",
        "state = Counter.create(1, ring size); per K step: wait load_empty[state.index] with state.phase; expect "
        "stage_bytes on load_ready[state.index]; four async_loads into stage state.index (multicast); state = "
        "state.next().",
    ),
    "05b capstone": (
        "Take the contracts one column at a time: before tile i's MMA writes a column, who read it last, and which "
        "barrier says they are done? Then: which window does tile i use, in what order does the epilogue read it, "
        "and when does it say so? Remember the runs with the overlap off.",
        "Three barriers hand a window over: acc_ready (MMA to epilogue: the tile's MMAs are done), acc_empty "
        "(epilogue to MMA: the whole window has been read) and overlap (epilogue to MMA: the columns the next tile "
        "shares have been read). For each, ask who arrives, who waits, and how many completions it has had by the "
        "time tile i waits (a Counter tracks ring index and parity; which side of a hand-over starts as if one lap "
        "were already done?). The windows alternate with the tile's parity; with the overlap off they are one, and "
        "acc_empty alone guards it (TMEM_PLAN.overlap is a constexpr: branch on it). The epilogue should read the "
        "shared columns first: at which end of each window do they lie? A subtile's start column must be a "
        "constexpr: branch on the tile's parity, and inside each branch compute the column from constexprs only.",
        "MMA: acc_state = Counter.create(1, p.acc_empty_bars.shape[0]); per tile wait acc_empty[acc_state.index] "
        "with acc_state.phase; if TMEM_PLAN.overlap: wait overlap with parity (i + 1) % 2; slice the left / right "
        "window by i % 2; the K loop; tcgen05_commit(acc_ready[acc_state.index]); advance acc_state. Epilogue: "
        "acc_state = Counter.create(0, p.acc_ready_bars.shape[0]); per tile wait acc_ready[acc_state.index]; per "
        "step, in an if on i % 2, slice subtile NUM_SUBTILES - 1 - step of the left window or subtile step of the "
        "right one (store at the same column of C); if TMEM_PLAN.overlap and step == "
        "TMEM_PLAN.early_release_subtile arrive on overlap (count=1); after the loop arrive on "
        "acc_empty[acc_state.index] (count=1) and advance acc_state. Barrier: allocate_mbarrier(batch=1, "
        "two_ctas=TWO_CTAS), init count=1.",
    ),
    "05b adaptation": (
        "Four numbers change: how many columns the scales take at BLOCK_K = 256, how far the windows must overlap "
        "now that 32 columns are gone, after which 16-column drain step the shared columns are all read, and how "
        "many load stages fit in shared memory.",
        "Per CTA, A's scales take BLOCK_K / VEC columns and B's (BLOCK_N / 128) x BLOCK_K / VEC. The two windows, "
        "the scale slots and the reserved block fill the 512 columns exactly and only the windows share columns, "
        "so the windows together cover 512 - scales - reserved columns: they overlap by 2 x 256 minus that. Put "
        "the windows next to each other on one side of the reserved block and the scales beside them. The release "
        "comes after the last drain step whose subtile holds a shared column: count the subtiles of each window "
        "that hold one (one that holds only some counts). A stage holds 128 rows of A and of B per CTA (BLOCK_K "
        "bytes a row for fp8 -- and for an fp4 operand loaded padded) plus the scale tiles; one NUM_BUFFERS serves "
        "every pair, and a CTA has 232,448 bytes of shared memory, the epilogue's staging buffers and the barriers "
        "included.",
        "VEC = 32: A 8 + B 16 = 24 scale columns; 512 - 24 - 32 = 456 columns for the windows, so they overlap by 2 x"
        " 256 - 456 = 56. LEFT (32, 256), RIGHT (232, 256) -- they share [232, 288) --, A_SCALES (488, 8), B_SCALES "
        "(496, 16) (or the scales first: A_SCALES (32, 8), B_SCALES (40, 16), LEFT (56, 256), RIGHT (256, 256)). With"
        " 16-column subtiles the 56 shared columns lie in 4 subtiles of either window (the left one's 12..15, 12 only"
        " in part), so the release comes after drain step 3. A stage is 68,608 bytes per CTA for mxfp8 x mxfp8 and "
        "for mxfp8 x mxfp4 (its fp4 B loaded padded): the largest, so 3 stages fit and 4 do not. Replace every "
        "TMEM_PLAN field your partitions read with these constants (the number of subtiles: BLOCK_N // the C box's "
        "width).",
    ),
    "06 find the bug": (
        "The hazard names a write and a read of the same staging buffer: which engine reads it, and when is that "
        "read done?",
        "A TMA store reads its shared-memory source after async_store returns; store_wait(pendings=n) returns once "
        "at most n stores of this thread are still in flight.",
        "Wait until the store that last used this staging buffer is done *before* writing the buffer: swap the "
        "store_wait and the c_smem.store.",
    ),
}


_shown: dict[str, int] = {}


def hint(title: str, level: int | None = None) -> None:
    """Print the next hint tier for ``title`` (or tier ``level``: 1 nudge, 2 concept, 3 recipe)."""
    if title not in HINTS:
        raise ValueError(f"no hints for {title!r}; exercises with hints: {sorted(HINTS)}")
    if level is None:
        level = min(_shown.get(title, 0) + 1, len(TIERS))
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= len(TIERS):
        raise ValueError(f"level={level!r} must be 1 (nudge), 2 (concept) or 3 (recipe)")
    _shown[title] = max(_shown.get(title, 0), level)
    more = "" if level == len(TIERS) else f"  (call again for the {TIERS[level]})"
    print(f"[{title}] hint {level}/3, the {TIERS[level - 1]}: {HINTS[title][level - 1]}{more}")
