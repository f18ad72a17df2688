// Mainloop schedule 2g (kMainloop 2): two WGMMA groups in flight with two partial buffers. Issue group g+1's
// first k-block into the other buffer, wait_group 1, release, and promote group g meanwhile. It adds the same
// partials in the same order as 1g: the output is bitwise identical. P = 1 only (rule R20).
//
// Not a header: a fragment of the consumer's tile loop in gemm/fp8_gemm.cuh, #included inside it in the branch
// of its schedule (why: gemm/mainloop_steps.cuh). Names it uses from the loop: the steps (gemm/mainloop_steps.cuh),
// part0 and part1, the work unit w and its num_groups k-blocks.
  // Two WGMMA groups in flight: k-block g accumulates into part[g % 2] (P = 1, rule R20). After
  // issuing k-block g, wait_group 1 retires everything before it, so the stage of k-block g-1 is
  // released and its buffer is added into acc while the tensor cores work on k-block g. The loop
  // is unrolled by two so the buffers are compile-time; its body has no branch around a WGMMA
  // (a branch there made ptxas serialize them, warning C7514). With P > 1 in the same shape
  // (inner runtime-length loops over a group) ptxas serialized (C7515) or spilled, hence R20.
  u32 pending = issue(part0, kFirstOfGroup);  // stage of the newest issued k-block, released one step later
  u32 kb_prev = w.k_begin;                     // k-block whose partial the next promote() adds
  auto next_group = [&](Buf& buf, Buf& prev) {
    fetch(pending, kb_prev);  // kb_prev's stage is `pending`: waited for, read before issue()'s WGMMA fence
    const u32 s = issue(buf, kFirstOfGroup);
    ptx::wgmma_wait<1>();
    release(pending);
    pending = s;
    promote(prev);
    ++kb_prev;
  };
  u32 g = 1;
  for (; g + 1 < num_groups; g += 2) {
    next_group(part1, part0);
    next_group(part0, part1);
  }
  if (g < num_groups) {
    next_group(part1, part0);
    fetch(pending, kb_prev);
    finish(part1, pending);
  } else {
    fetch(pending, kb_prev);
    finish(part0, pending);
  }
