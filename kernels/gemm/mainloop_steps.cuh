// The consumer's WGMMA steps, shared by every mainloop schedule (gemm/mainloop_1g.cuh, mainloop_2g.cuh,
// mainloop_2o.cuh, mainloop_pp.cuh): the warpgroup's place in the stage ring (stage, phase), and
//   issue / issue_fetch  wait for the next full stage and issue its k-steps into a partial buffer
//   issue_granules       the same for block scales with BLOCK_K 256: one partial buffer per 128-wide granule
//   release              give a stage back to its producers (empty barriers, gemm/stage_ring.cuh)
//   promote              add a retired partial buffer into the FP32 accumulators acc (block modes: scaled)
//   fetch / finish       block modes' scale reads; a tile's last k-block retired, released and promoted
//
// Not a header: a fragment of the consumer branch of the kernel (gemm/fp8_gemm.cuh), #included inside it after the
// accumulators, because the steps are lambdas on the kernel's locals. Written as a struct's methods (values or
// references as members) the same code came out with other SASS: NVVM simplifies a callee before inlining it,
// and the changed shape of the callees changed the order of the ring-index updates and the register copies
// (tests/nvrtc/sass_diff.sh compares the SASS). Names it uses from the kernel: T, Mma, Buf, smem_a, smem_b,
// smem_scales, full_bar, empty_bar, a_desc_lo, b_desc_lo, lane, scaler, acc, kSwizzle, kNumStages, BLOCK_M,
// BLOCK_N, kTrimmedBlockLoop; the mainloop fragments use everything it defines.
u32 stage = 0, phase = 0;
// A descriptor's low word (start address >> 4) for byte `in_stage` of the current stage of an operand. In the trimmed
// block-scaled loop (kTrimmedBlockLoop, fp8_gemm.cuh: where and why) the stage's offset is added as
// stage x (stage bytes >> 4) instead of folded into one shift with the k-step's offset: ptxas then builds each QGMMA's
// low words with one UIADD3 each from a per-stage base (4 uniform instructions per QGMMA instead of 6). Same values:
// every stage size and offset is a multiple of 16 bytes. Ping-pong, never block-scaled (R24), keeps the folded form:
// with the split, ptxas moved the stage offset through a vector register there (an R2UR between the full-barrier
// wait and the last QGMMA, tests/nvrtc/test_sass.cpp).
static_assert(T::kSmemAStage % 16 == 0 && T::kSmemBStage % 16 == 0, "stage sizes must be multiples of 16 bytes");
auto desc_lo = [&](u32 base, u32 stage_bytes, u32 in_stage) -> u32 {
  if constexpr (kTrimmedBlockLoop) return base + stage * (stage_bytes >> 4) + (in_stage >> 4);
  else return base + ((stage * stage_bytes + in_stage) >> 4);
};
// One k32 step s of the current stage into `buf` (zero: overwrite, i.e. the first step of a partial sum).
auto mma_step = [&](Buf& buf, u32 s, bool zero) {
  // k-step s covers bytes [32*s, 32*s + 32) of the k-block: span (32*s)/kSwizzle, offset (32*s)%kSwizzle.
  const u32 atom = (32 * s) / kSwizzle, offset = (32 * s) % kSwizzle;
#ifdef DGT_TEST_NONUNIFORM_DESC
  // Test-only negative case (tests/nvrtc): descriptors rebuilt per k-block from the thread index.
  const u64 desc_b = ptx::make_kmajor_desc<kSwizzle>(smem_u32(smem_b + stage * T::kSmemBStage) + atom * BLOCK_N * kSwizzle + offset);
#else
  const u64 desc_b = ptx::kmajor_desc<kSwizzle>(desc_lo(b_desc_lo, T::kSmemBStage, atom * BLOCK_N * kSwizzle + offset));
#endif
#pragma unroll
  for (u32 j = 0; j < T::kMmaPerWG; ++j) {
#ifdef DGT_TEST_NONUNIFORM_DESC
    const u64 desc_a = ptx::make_kmajor_desc<kSwizzle>(smem_u32(smem_a + stage * T::kSmemAStage) + atom * BLOCK_M * kSwizzle +
                                                       ((T::kPingpong ? 0u : threadIdx.x / 128) * T::kRowsPerWG + 64 * j) * kSwizzle + offset);
#else
    const u64 desc_a = ptx::kmajor_desc<kSwizzle>(
        desc_lo(a_desc_lo, T::kSmemAStage, atom * BLOCK_M * kSwizzle + 64 * j * kSwizzle + offset));
#endif
    Mma::template mma<T::kTypes>(buf[j], desc_a, desc_b, zero ? 0u : 1u);
  }
};
// Waits for the next full stage and issues its k-steps into `buf`; the first k-step overwrites
// `buf` when `first` (the first k-block of a promotion group). Returns the stage it read.
// Block modes, with `fetch_kb` set: k-block fetch_kb's scales are read between the full-barrier wait and
// the WGMMA fence (see fetch below).
bool trace_first_full = kTrace;  // dgtune trace: mark the CTA's first full-barrier wait
auto issue_fetch = [&](Buf& buf, bool first, bool fetch_kb, u32 kb) -> u32 {
  ptx::mbar_wait(&full_bar[stage], phase);
  if constexpr (kTrace) {
    if (trace_first_full && threadIdx.x == 0) trace_mark(kTraceFirstFull);
    trace_first_full = false;
  }
  if constexpr (T::kBlockScaled) {
    if (fetch_kb) scaler.fetch(smem_scales + stage * T::kSmemScaleStage, 0, kb * T::kGranulesPerStage);
  }
  ptx::wgmma_fence();
#pragma unroll
  for (u32 s = 0; s < T::kStepsK; ++s) mma_step(buf, s, first && s == 0);
  ptx::wgmma_commit();
  const u32 read = stage;
  if (++stage == kNumStages) stage = 0, phase ^= 1;
  return read;
};
auto issue = [&](Buf& buf, bool first) -> u32 { return issue_fetch(buf, first, false, 0); };
// Block scale modes with BLOCK_K = 256 (1g only, rule R21): the k-block holds two 128-wide granules,
// each summed into its own partial buffer (k-steps 0-3 into b0, 4-7 into b1) so each is promoted with
// its own scales. One commit group.
auto issue_granules = [&](Buf& b0, Buf& b1) -> u32 {
  ptx::mbar_wait(&full_bar[stage], phase);
  if constexpr (kTrace) {
    if (trace_first_full && threadIdx.x == 0) trace_mark(kTraceFirstFull);
    trace_first_full = false;
  }
  ptx::wgmma_fence();
#pragma unroll
  for (u32 s = 0; s < T::kStepsK / 2; ++s) mma_step(b0, s, s == 0);
#pragma unroll
  for (u32 s = T::kStepsK / 2; s < T::kStepsK; ++s) mma_step(b1, s, s == T::kStepsK / 2);
  ptx::wgmma_commit();
  const u32 read = stage;
  if (++stage == kNumStages) stage = 0, phase ^= 1;
  return read;
};
// The stage has been read by the tensor cores: release it to every producer that writes it
// (lane i arrives on CTA i's barrier).
auto release = [&](u32 s) {
  if constexpr (T::kMcastSize == 1) {
    if (lane == 0) ptx::mbar_arrive(&empty_bar[s]);
  } else {
    if (lane < T::kMcastSize) ptx::mbar_arrive_cluster(&empty_bar[s], lane);
  }
};
// Promotion: acc += buf (after the wait that retired buf's WGMMAs); block modes multiply buf by the
// scales of its granule, which fetch() read earlier from the stage's scale slot (after the stage's
// full-barrier wait, before its release, so the shared-memory reads overlap the WGMMA wait).
auto promote = [&](Buf& buf) {
  if constexpr (T::kBlockScaled) {
    scaler.promote(acc, buf);
  } else {
#pragma unroll
    for (u32 j = 0; j < T::kMmaPerWG; ++j)
#pragma unroll
      for (u32 i = 0; i < T::kAccPerMma; ++i) {
        ptx::fence_operand(buf[j][i]);
        acc[j][i] += buf[j][i];
      }
  }
};
// Block modes: the scales of k-block kb, read in `st` (its stage, waited for and not yet released).
// With BLOCK_K = 128 k-block kb is granule kb (BLOCK_K = 256: granules 2 kb and 2 kb + 1, slots 0 and 1).
// The reads (LDS, generic proxy) must be performed before the stage is released, or the producer's next
// copy into the slot (async proxy) can land first: a write-after-read race, seen on the H200 (4096x4096x16
// block, 128x64 2g with the direct epilogue, 352 wrong elements in one of three runs) when the release
// followed the reads with only a WGMMA wait between; ptxas also moves the release above the FFMAs that
// consume the values, so source order after promote() does not help. Where a WGMMA follows, the reads
// go before its fence (issue_fetch; the order DeepGEMM relies on); where none does (a tile's last
// k-block in 2g, the second granule of a BLOCK_K 256 stage), fence.proxy.async orders them before the
// release (PTX ISA, memory consistency model: accesses through different proxies need a proxy fence).
auto fetch = [&](u32 st, u32 kb, u32 slot = 0) {
  if constexpr (T::kBlockScaled) scaler.fetch(smem_scales + st * T::kSmemScaleStage, slot, kb * T::kGranulesPerStage + slot);
};
// Retires the last issued k-block of a tile (stage st, partial buf), releases its stage and folds it in;
// block modes first order their scale reads before the release (see fetch).
auto finish = [&](Buf& buf, u32 st) {
  ptx::wgmma_wait<0>();
  if constexpr (T::kBlockScaled) ptx::fence_proxy_async_smem();
  release(st);
  promote(buf);
};
constexpr bool kFirstOfGroup = true, kMore = false;
