// Mainloop schedule 1g (kMainloop 1): one promotion group in flight. P = 1: issue a k-block, wait for it
// (wait_group 0), release its stage, add the partial sum into the FP32 accumulators. P > 1 (fast accumulation,
// P = kPromoteEvery k-blocks per group): the group's k-blocks are issued one ahead (wait_group 1), the last one
// retired with wait_group 0, then the group is added into acc. The schedule of dgtune <= 0.1 (which also waited
// for every k-block of a group), and the only one with P > 1 besides pp (R20).
//
// Not a header: a fragment of the consumer's tile loop in gemm/fp8_gemm.cuh, #included inside it in the branch
// of its schedule (why: gemm/mainloop_steps.cuh). Names it uses from the loop: the steps (gemm/mainloop_steps.cuh),
// part0 and part1 (block scales with BLOCK_K 256), the work unit w, its num_groups promotion groups (the last of
// last_group_kb k-blocks) and P.
  // One WGMMA group in flight: issue a k-block, wait for it, release its stage; after the last
  // k-block of a group, add the partial sum into acc.
  if constexpr (T::kBlockScaled && BLOCK_K == 256) {
    // Two granules per k-block: granule 2 kb in part0, 2 kb + 1 in part1 (past K: zero partial, zero scale).
    for (u32 g = 0; g < num_groups; ++g) {
      const u32 kb = w.k_begin + g;
      const u32 s = issue_granules(part0, part1);
      fetch(s, kb, 0);
      ptx::wgmma_wait<0>();
      promote(part0);
      fetch(s, kb, 1);
      ptx::fence_proxy_async_smem();  // the second granule's scale reads before the release (see fetch)
      release(s);
      promote(part1);
    }
  } else
  for (u32 g = 0; g < num_groups; ++g) {
    // P = 1 in block modes: group g is k-block k_begin + g; its scales are read before the WGMMA fence.
    const u32 first = issue_fetch(part0, kFirstOfGroup, true, w.k_begin + g);
    if constexpr (P > 1) {
      // Inside a group the k-blocks chain into the same partial buffer, so nothing has to be read between
      // them: issue k-block i, retire i - 1 (wait_group 1) and release its stage, as the ping-pong mainloop
      // does. The tensor cores then always hold this warpgroup's next k-block when one completes, instead of
      // idling through the wait, the release and the next full-barrier wait (measured as fast mode's gap to
      // 2g in promote mode). Same WGMMAs in the same order: the output bits do not change.
      const u32 n = g + 1 == num_groups ? last_group_kb : P;
      u32 prev = first;
      for (u32 i = 1; i < n; ++i) {
        const u32 s = issue(part0, kMore);
        ptx::wgmma_wait<1>();
        release(prev);
        prev = s;
      }
      ptx::wgmma_wait<0>();
      release(prev);
    } else {
      ptx::wgmma_wait<0>();
      release(first);
    }
    promote(part0);
  }
