// Mainloop schedule pp (kMainloop 4, ping-pong; fast accumulation with K <= P x BLOCK_K, rule P8): the two
// consumer warpgroups take alternate work units of the CTA (local unit i goes to warpgroup i % 2), each summing
// a whole BLOCK_M x BLOCK_N tile on the tensor cores over all of K, with one WGMMA group kept in flight
// (wait_group 1) and no promotion: the sum is the result (the same as 1g's acc = 0 + part with one promotion
// group). While one warpgroup runs its epilogue, the other's WGMMAs keep the tensor cores busy: the epilogue
// overlaps the mainloop whatever its length. The producer loads the units in order as for every schedule; each
// stage is read by one warpgroup, which skips the stages of the other's units (pp_skip, set up by the kernel).
//
// Not a header: a fragment of the consumer's tile loop in gemm/fp8_gemm.cuh, #included inside it in the branch
// of its schedule (why: gemm/mainloop_steps.cuh). Names it uses from the loop: the steps (gemm/mainloop_steps.cuh),
// acc, wg, unit, cluster_id, num_clusters, sched, pp_kb and pp_skip.
  // Turn order. The full barriers are waited on by phase parity, which only tells the phase in
  // progress from the one before it: a warpgroup that skipped the other's unit and waited for its own
  // next phase of a stage while the other's phase of that stage was still in progress would see the
  // older phase with the same parity as complete and read a stage not yet loaded (measured: wrong
  // results, launch failures and hangs). So the units' mainloops run strictly in turn: a warpgroup
  // starts waiting for its unit's stages only after the other has waited for all of the previous
  // unit's (named barrier 4 + w: warpgroup w waits there, the other arrives), as CUTLASS's ping-pong
  // kernel orders its math warpgroups. Epilogues are not ordered: they overlap the other's mainloop.
  if (unit != cluster_id) ptx::named_barrier_sync(4 + wg, 256);
  // The whole of K into acc (P8: num_kb <= P), one group in flight: issue k-block i, retire i - 1,
  // release its stage.
  u32 prev = issue(acc, kFirstOfGroup);
  for (u32 i = 1; i < pp_kb; ++i) {
    const u32 s = issue(acc, kMore);
    ptx::wgmma_wait<1>();
    release(prev);
    prev = s;
  }
  // Every stage of this unit has been waited for: the other warpgroup's next unit may start.
  if (unit + num_clusters < sched.num_units) ptx::named_barrier_arrive(4 + (1 - wg), 256);
  ptx::wgmma_wait<0>();
  release(prev);
  pp_skip();  // the other warpgroup's next unit
#pragma unroll
  for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
    for (u32 i = 0; i < T::kAccPerMma; ++i) ptx::fence_operand(acc[j][i]);
