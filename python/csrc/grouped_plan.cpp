#include "grouped_plan.hpp"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace dgt::torch_op {
namespace {

const char* dtype_name(GroupedDtype d) {
  switch (d) {
    case GroupedDtype::kE4M3: return "float8_e4m3fn";
    case GroupedDtype::kBF16: return "bfloat16";
    case GroupedDtype::kF32: return "float32";
    case GroupedDtype::kI32: return "int32";
    default: return "another dtype";
  }
}

std::string list(const std::vector<int64_t>& v, bool brackets) {
  std::string s = brackets ? "[" : "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (!brackets && v.size() == 1) s += ",";  // Python's one-element tuple
  return s + (brackets ? "]" : ")");
}

std::vector<int64_t> shape_of(const GroupedTensor& t) { return {t.size, t.size + t.dim}; }
std::vector<int64_t> strides_of(const GroupedTensor& t) { return {t.stride, t.stride + t.dim}; }

int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/// The strides match where the size is not 1 (a size-1 dimension's stride never forms an address).
bool strides_match(const GroupedTensor& t, const std::vector<int64_t>& want) {
  if (static_cast<size_t>(t.dim) != want.size()) return false;
  for (int i = 0; i < t.dim; ++i)
    if (t.size[i] != 1 && t.stride[i] != want[static_cast<size_t>(i)]) return false;
  return true;
}

/// Row-major without gaps, as torch's is_contiguous (size-1 dimensions ignored; an empty tensor is contiguous).
bool contiguous(const GroupedTensor& t) {
  if (t.numel == 0) return true;
  int64_t expect = 1;
  for (int i = t.dim - 1; i >= 0; --i) {
    if (t.size[i] != 1 && t.stride[i] != expect) return false;
    expect *= t.size[i];
  }
  return true;
}

}  // namespace

GroupedOpPlan plan_grouped(const GroupedOpArgs& x) {
  const bool masked = x.masked;
  const std::string op = masked ? "m_grouped_scaled_mm_masked" : "m_grouped_scaled_mm_contiguous";
  const char* layout_name = masked ? "masked_m" : "m_indices";
  auto fail = [&](const std::string& msg) { throw GroupedOpError("dgtune." + op + ": " + msg); };

  const int a_dim = masked ? 3 : 2;
  const std::pair<const char*, const GroupedTensor*> dims[] = {{"a", &x.a}, {"b", &x.b}, {"out", &x.out},
                                                               {layout_name, &x.layout}};
  const int want_dims[] = {a_dim, 3, a_dim, 1};
  for (int i = 0; i < 4; ++i)
    if (dims[i].second->dim != want_dims[i])
      fail(std::string(dims[i].first) + " must be " + std::to_string(want_dims[i]) + "-D, got shape " +
           list(shape_of(*dims[i].second), false));
  const std::tuple<const char*, const GroupedTensor*, GroupedDtype> dtypes[] = {
      {"a", &x.a, GroupedDtype::kE4M3},          {"b", &x.b, GroupedDtype::kE4M3},
      {"out", &x.out, GroupedDtype::kBF16},      {"a_scale", &x.a_scale, GroupedDtype::kF32},
      {"b_scale", &x.b_scale, GroupedDtype::kF32}, {layout_name, &x.layout, GroupedDtype::kI32}};
  for (const auto& [name, t, want] : dtypes)
    if (t->dtype != want)
      fail(std::string(name) + " must be " + dtype_name(want) + ", got " + dtype_name(t->dtype));
  const std::pair<const char*, const GroupedTensor*> others[] = {
      {"a_scale", &x.a_scale}, {"b", &x.b}, {"b_scale", &x.b_scale}, {"out", &x.out}, {layout_name, &x.layout}};
  for (const auto& [name, t] : others)
    if (t->device != x.a.device)
      fail("Expected all tensors to be on the same device, but found at least two devices, " + x.a.device + " (a) and " +
           t->device + " (" + name + ")");
  const int64_t groups = x.b.size[0], n = x.b.size[1], k = x.b.size[2];
  if (groups < 1 || groups > 4096) fail("b's G = " + std::to_string(groups) + " must be in 1 .. 4096 (b is [G, N, K])");
  int64_t m = 0;
  std::vector<int64_t> want_out;
  if (masked) {
    if (x.a.size[0] != groups)
      fail("a has " + std::to_string(x.a.size[0]) + " groups, b has " + std::to_string(groups) +
           " (a [G, M_max, K], b [G, N, K])");
    m = x.a.size[1];
    want_out = {groups, m, n};
  } else {
    m = x.a.size[0];
    want_out = {m, n};
  }
  const int64_t a_k = x.a.size[a_dim - 1];
  if (a_k != k)
    fail("a's K = " + std::to_string(a_k) + " differs from b's K = " + std::to_string(k) + " (b is [G, N, K])");
  if (shape_of(x.out) != want_out) fail("out must be " + list(want_out, true) + ", got " + list(shape_of(x.out), true));
  const int64_t want_layout = masked ? groups : m;
  if (x.layout.size[0] != want_layout)
    fail(std::string(layout_name) + " must have " + std::to_string(want_layout) + " entries (" +
         (masked ? "G" : "M_sum") + "), got " + std::to_string(x.layout.size[0]));
  if (m % 128 != 0 || (masked && m == 0))
    fail(std::string(masked ? "M_max (a.size(1))" : "M_sum (a.size(0))") + " = " + std::to_string(m) + " must be a " +
         (masked ? "positive " : "") + "multiple of 128 (each group's rows are whole 128-row blocks)");
  if (k % 16 != 0 || k == 0)
    fail("K = " + std::to_string(k) + " must be a positive multiple of 16 (16-byte rows of a and b for TMA)");
  if (masked && x.expected_m < 1) fail("expected_m = " + std::to_string(x.expected_m) + " must be >= 1");
  for (const auto& [name, t] : dims)
    if (!contiguous(*t)) fail(std::string(name) + " must be contiguous, got strides " + list(strides_of(*t), false));
  const bool per_tensor = x.a_scale.numel == 1 && x.b_scale.numel == 1;
  if (!per_tensor) {
    const int64_t kg = ceil_div(k, 128), nb = ceil_div(n, 128), kp = (kg + 3) / 4 * 4;
    const std::vector<int64_t> want_sa = masked ? std::vector<int64_t>{groups, m, kg} : std::vector<int64_t>{m, kg};
    const std::vector<int64_t> want_sb = {groups, nb, kg};
    if (shape_of(x.a_scale) != want_sa)
      fail("a_scale must be " + list(want_sa, true) + " (1x128 blocks of a) or one element with b_scale, got " +
           list(shape_of(x.a_scale), true));
    if (shape_of(x.b_scale) != want_sb)
      fail("b_scale must be " + list(want_sb, true) + " (128x128 blocks of b) or one element with a_scale, got " +
           list(shape_of(x.b_scale), true));
    const std::vector<int64_t> sa = masked ? std::vector<int64_t>{kg * m, 1, m} : std::vector<int64_t>{1, m};
    const std::vector<int64_t> sb = {nb * kp, kp, 1};
    if (!strides_match(x.a_scale, sa))
      fail("a_scale must be M-major and TMA-aligned with strides " + list(sa, false) + ", got " +
           list(strides_of(x.a_scale), false) + " (dgtune.get_col_major_tma_aligned_tensor makes one)");
    if (!strides_match(x.b_scale, sb))
      fail("b_scale must have strides " + list(sb, false) +
           " (rows of ceil(K/128) scales padded to 16 bytes), got " + list(strides_of(x.b_scale), false));
  }
  std::vector<std::tuple<const char*, const GroupedTensor*, unsigned>> aligned = {
      {"a", &x.a, 16}, {"b", &x.b, 16}, {"out", &x.out, 16}, {layout_name, &x.layout, 4}};
  if (!per_tensor) {
    aligned.emplace_back("a_scale", &x.a_scale, 16);
    aligned.emplace_back("b_scale", &x.b_scale, 16);
  }
  for (const auto& [name, t, align] : aligned)
    if (t->ptr % align != 0)
      fail(std::string(name) + "'s data must be " + std::to_string(align) + "-byte aligned (address " +
           std::to_string(t->ptr) + ")");
  GroupedOpPlan p;
  p.key.layout = masked ? GroupedLayout::kMasked : GroupedLayout::kContiguous;
  p.key.groups = static_cast<int>(groups);
  p.key.m = m;
  p.key.expected_m = masked ? x.expected_m : 0;
  p.key.n = n;
  p.key.k = k;
  p.key.scale = per_tensor ? Fp8Scaling::kPerTensor : Fp8Scaling::kBlock;
  p.empty = !masked && m == 0;
  return p;
}

}  // namespace dgt::torch_op
