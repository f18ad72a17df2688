#include "bench/grouped_data.hpp"

#include <algorithm>
#include <vector>

#include "bench/verify.hpp"
#include "core/error.hpp"
#include "core/int_math.hpp"

namespace dgt {

namespace {

/// Seeded scales in [0.5, 2), never exactly 1 (as ProblemData's), so a wrong group's scale fails verification.
std::vector<float> seeded_scales(int64_t count, uint64_t seed, uint64_t salt) {
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(count, 1)));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + salt;
  for (auto& f : v) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
    f = 0.5f + float(x % 1000) / 1000.0f * 1.5f;
    if (f == 1.0f) f = salt % 2 ? 0.75f : 1.25f;
  }
  return v;
}

}  // namespace

GroupedData::GroupedData(const UtilKernels& util, const GroupedProblem& g, uint64_t seed, cudaStream_t s)
    : g_(g), seed_(seed) {
  const int64_t rows = g.total_rows();
  a_ = DeviceBuffer(size_t(rows * g.k));
  b_ = DeviceBuffer(size_t(int64_t(g.groups) * g.n * g.k));
  d_ = DeviceBuffer(size_t(rows * g.n * 2));
  const int64_t kg = ceil_div(g.k, kScaleBlock), nb = ceil_div(g.n, kScaleBlock);
  int64_t sa_elems = 1, sb_elems = 1;
  if (g.scale == ScaleMode::kBlock) {
    ld_sa_ = g.kind == GroupKind::kMasked ? g.m_max : rows;
    ld_sb_ = round_up(kg, 4);
    sa_elems = g.kind == GroupKind::kMasked ? int64_t(g.groups) * kg * g.m_max : kg * rows;
    sb_elems = int64_t(g.groups) * nb * ld_sb_;
  }
  const std::vector<float> ha = seeded_scales(sa_elems, seed, 1), hb = seeded_scales(sb_elems, seed, 2);
  sa_ = DeviceBuffer(size_t(round_up(sa_elems * 4, 256)));
  sb_ = DeviceBuffer(size_t(round_up(sb_elems * 4, 256)));
  DGT_CHECK_CUDA(cudaMemcpyAsync(sa_.get(), ha.data(), ha.size() * 4, cudaMemcpyHostToDevice, s));
  DGT_CHECK_CUDA(cudaMemcpyAsync(sb_.get(), hb.data(), hb.size() * 4, cudaMemcpyHostToDevice, s));
  const std::vector<int32_t> layout = g.layout();
  layout_ = DeviceBuffer(std::max<size_t>(layout.size(), 1) * 4);
  DGT_CHECK_CUDA(cudaMemcpyAsync(layout_.get(), layout.data(), layout.size() * 4, cudaMemcpyHostToDevice, s));
  util.fill_fp8(b_.get(), int64_t(g.groups) * g.n, g.k, g.k, seed * 2 + 2, DType::kE4M3, s);
  fill_a(util, s);
  reset_d(s);
  int64_t max_rows = 1;
  for (int64_t r : g.rows) max_rows = std::max(max_rows, r);
  dref_ = DeviceBuffer(size_t(max_rows * g.n * 4));
  stats_ = DeviceBuffer(sizeof(CompareStatsHost));
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

void GroupedData::fill_a(const UtilKernels& util, cudaStream_t s) const {
  util.fill_fp8(a_.get(), g_.total_rows(), g_.k, g_.k, seed_ * 2 + 1, DType::kE4M3, s);
  // Rows that hold no real row: NaN (e4m3 0xFF), whole rows from the group's count to its segment's end.
  const std::vector<int64_t> starts = g_.group_starts();
  for (size_t i = 0; i < g_.rows.size(); ++i) {
    const int64_t end = g_.kind == GroupKind::kMasked ? g_.m_max : round_up(g_.rows[i], kGroupRowAlign);
    const int64_t pad = end - g_.rows[i];
    if (pad > 0)
      DGT_CHECK_CUDA(cudaMemsetAsync(a_.as<uint8_t>() + (starts[i] + g_.rows[i]) * g_.k, 0xFF, size_t(pad * g_.k), s));
  }
}

jit::GroupedOperands GroupedData::operands() const {
  jit::GroupedOperands o;
  o.a = a_.get();
  o.b = b_.get();
  o.d = d_.get();
  o.scale_a = sa_.as<float>();
  o.scale_b = sb_.as<float>();
  o.layout = layout_.as<int32_t>();
  return o;
}

void GroupedData::reset_d(cudaStream_t s) const {
  DGT_CHECK_CUDA(cudaMemsetAsync(d_.get(), 0xFF, d_.bytes(), s));
}

void GroupedData::set_counts(const UtilKernels& util, const std::vector<int64_t>& rows, cudaStream_t s) {
  if (g_.kind != GroupKind::kMasked)
    DGT_THROW(ErrorKind::kInvalid, "set_counts: {} is not a masked problem", g_.label());
  GroupedProblem next = g_;
  next.rows = rows;
  next.rows_text = "set_counts";
  validate_grouped(next, "set_counts");
  g_ = next;
  const std::vector<int32_t> layout = g_.layout();
  DGT_CHECK_CUDA(cudaMemcpyAsync(layout_.get(), layout.data(), layout.size() * 4, cudaMemcpyHostToDevice, s));
  fill_a(util, s);
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

Verification GroupedData::verify(const UtilKernels& util, cudaStream_t s) const {
  DGT_CHECK_CUDA(cudaMemsetAsync(stats_.get(), 0, sizeof(CompareStatsHost), s));
  const std::vector<int64_t> starts = g_.group_starts();
  const int64_t kg = ceil_div(g_.k, kScaleBlock), nb = ceil_div(g_.n, kScaleBlock);
  for (size_t i = 0; i < g_.rows.size(); ++i) {
    const int64_t m = g_.rows[i], start = starts[i];
    // The group's segment: its rows, then the rows that must keep the sentinel (compare's guard rows).
    const int64_t seg = g_.kind == GroupKind::kMasked ? g_.m_max : round_up(m, kGroupRowAlign);
    if (seg == 0) continue;
    Problem p = Problem::dense(std::max<int64_t>(m, 1), g_.n, g_.k);
    p.scale = g_.scale;
    p.accum = g_.accum;
    const uint16_t* d_group = d_.as<uint16_t>() + start * g_.n;
    if (m > 0) {
      const float* sa = sa_.as<float>();
      const float* sb = sb_.as<float>();
      if (g_.scale == ScaleMode::kBlock) {
        sa += g_.kind == GroupKind::kMasked ? int64_t(i) * kg * g_.m_max : start;
        sb += int64_t(i) * nb * ld_sb_;
      }
      util.reference_gemm(p, a_.as<uint8_t>() + start * g_.k, b_.as<uint8_t>() + int64_t(i) * g_.n * g_.k, sa, sb,
                          ld_sa_, ld_sb_, dref_.as<float>(), s);
    }
    p.m = m;  // 0 rows: every row of the segment is a guard row
    util.compare(p, d_group, dref_.as<float>(), seg, stats_.as<CompareStatsHost>(), 1.f, 0.f, s);
  }
  CompareStatsHost host{};
  DGT_CHECK_CUDA(cudaMemcpyAsync(&host, stats_.get(), sizeof host, cudaMemcpyDeviceToHost, s));
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
  return judge(host, VerifyThresholds::for_accum(g_.accum));
}

}  // namespace dgt
