// Mainloop schedule 2o (kMainloop 3): 2g plus epilogue overlap. Once a tile's last k-block is retired and
// promoted, the next tile's first k-block is issued into part0 before the epilogue (and retired at the next
// tile's start), so the tensor cores work while the CUDA cores store the tile. Same partials, same order of
// additions into acc as 1g and 2g: bitwise identical output. P = 1 only (rule R20). The kernel issues the CTA's
// first tile's first k-block before the tile loop (pending_o) and closes the WGMMA pipeline after it.
//
// Not a header: a fragment of the consumer's tile loop in gemm/fp8_gemm.cuh, #included inside it in the branch
// of its schedule (why: gemm/mainloop_steps.cuh). Names it uses from the loop: the steps (gemm/mainloop_steps.cuh),
// part0, part1, pending_o, num_groups, unit, unit_first, num_clusters and sched.
  // 2o. This tile's first k-block (kb0) is already in flight in part0: issued before the previous
  // tile's epilogue (or before the tile loop for the CTA's first tile), so it ran on the tensor
  // cores during that epilogue. Retire and promote it first (wait_group 0: by now it is normally
  // done), then run the remaining k-blocks with the 2g schedule and its tail, and finally issue
  // the next tile's kb0 into part0, right before this tile's epilogue.
  // Why kb0 is retired with wait_group 0 here instead of being the first group of the 2g loop
  // (wait_group 1 after issuing kb1): with a group in flight across the tile loop's back edge,
  // ptxas could not prove that wait_group 1 retired it and serialized every WGMMA (C7514), for
  // every placement of the early issue that was tried. Retiring it first gives the loop head one
  // known in-flight group and the rest of the tile the exact 2g code shape.
  // Numerics: acc = 0 + kb0 + kb1 + ... in k order, the same FADDs as 1g/2g (bitwise identical).
  static_assert(kPromoteEvery == 1, "R20: 2o promotes every k-block");
  auto next_group = [&](Buf& buf, Buf& prev) {
    const u32 s = issue(buf, kFirstOfGroup);
    ptx::wgmma_wait<1>();
    release(pending_o);
    pending_o = s;
    promote(prev);
  };
  ptx::wgmma_wait<0>();
  release(pending_o);
  promote(part0);
  const u32 rest = num_groups - 1;
  if (rest > 0) {
    pending_o = issue(part0, kFirstOfGroup);
    u32 g = 1;
    for (; g + 1 < rest; g += 2) {
      next_group(part1, part0);
      next_group(part0, part1);
    }
    if (g < rest) {
      next_group(part1, part0);
      ptx::wgmma_wait<0>();
      release(pending_o);
      promote(part1);
    } else {
      ptx::wgmma_wait<0>();
      release(pending_o);
      promote(part0);
    }
  }
  // Nothing is in flight here. The next tile of this CTA, if any, starts now: its stage is the next
  // in the ring, which the producer (already ahead) filled or is filling; stage/phase continue as
  // for any other k-block. Only part0 is written, so acc is intact for the epilogue below, and
  // the epilogue's TMA staging buffer is not touched by WGMMAs (they read only A/B stages).
  if constexpr (kTrace) {  // dgtune trace: this tile's mainloop ends here, before the next tile's early issue
    if (unit == unit_first && threadIdx.x == 0) trace_mark(kTraceMainloopEnd);
  }
  if (unit + num_clusters < sched.num_units) pending_o = issue(part0, kFirstOfGroup);
