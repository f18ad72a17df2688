#include "launch/copy_limit.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/error.hpp"
#include "core/int_math.hpp"

namespace dgt {

static_assert(sizeof(CopyLimitArgs::Segment) == 40, "must match dgt::util::CopySegment");
static_assert(sizeof(CopyLimitArgs) == 128, "must match dgt::util::CopyLimitArgs");

namespace {
constexpr uint32_t kSinkMagic = 0x9e3779b9u;  // kernels/util/copy_limit.cuh kCopySinkMagic
constexpr int kBlocksPerSm = 2;               // __launch_bounds__(512, 2)
constexpr int kWordsPerThread = 4;            // loads in flight per thread

/// rows of `cols` bytes at a stride of `ld` bytes (a multiple of 16).
CopyLimitArgs::Segment segment(int64_t rows, int64_t cols, int64_t ld) {
  CopyLimitArgs::Segment s;
  s.rows = uint64_t(rows);
  s.row_words = uint64_t(ceil_div(cols, int64_t(16)));
  s.ld_words = uint64_t(ld / 16);
  s.tail_bytes = cols % 16 == 0 ? 16u : uint32_t(cols % 16);
  if (s.tail_bytes == 16 && s.ld_words == s.row_words) {  // dense: one run of words, no division per word
    s.row_words *= s.rows;
    s.ld_words = s.row_words;
    s.rows = 1;
  }
  return s;
}
}  // namespace

CopyLimitPlan plan_copy_limit(const Problem& p, int sm_count) {
  validate_problem(p);
  if (sm_count < 1) DGT_THROW(ErrorKind::kInvalid, "plan_copy_limit: sm_count = {} (must be >= 1)", sm_count);
  const int64_t ea = dtype_bytes(p.a), eb = dtype_bytes(p.b), ed = dtype_bytes(p.d);
  CopyLimitPlan plan;
  CopyLimitArgs& g = plan.args;
  g.a = segment(p.m, p.k * ea, p.lda * ea);
  g.b = segment(p.n, p.k * eb, p.ldb * eb);
  const int64_t d_row_bytes = p.n * ed, d_ld_bytes = p.ldd * ed;
  g.d_ld_bytes = uint64_t(d_ld_bytes);
  g.d_vector = d_ld_bytes % 16 == 0 ? 1u : 0u;
  g.d_rows = uint64_t(p.m);
  g.d_row_units = g.d_vector ? uint64_t(ceil_div(d_row_bytes, int64_t(16))) : uint64_t(p.n);
  const int64_t unit = g.d_vector ? 16 : ed;
  if (int64_t(g.d_row_units) * unit == d_ld_bytes) {  // dense D: one run
    g.d_row_units *= g.d_rows;
    g.d_rows = 1;
  }
  const uint64_t read_words = g.a.rows * g.a.row_words + g.b.rows * g.b.row_words;
  const uint64_t d_units = g.d_rows * g.d_row_units;
  plan.bytes_read = int64_t(read_words * 16);
  plan.bytes_written = int64_t(d_units) * unit;
  const uint64_t work = std::max(read_words, d_units);
  const uint64_t wanted = ceil_div(work, uint64_t(plan.block) * kWordsPerThread);
  plan.grid = unsigned(std::clamp<uint64_t>(wanted, 1, uint64_t(sm_count) * kBlocksPerSm));
  return plan;
}

void copy_limit_reference(const CopyLimitPlan& plan, std::span<const uint8_t> a, std::span<const uint8_t> b,
                          std::span<uint8_t> d) {
  const CopyLimitArgs& g = plan.args;
  auto need = [](const char* what, size_t have, uint64_t bytes) {
    if (have < bytes)
      DGT_THROW(ErrorKind::kInvalid, "copy_limit_reference: {} holds {} bytes, the plan touches {}", what, have, bytes);
  };
  auto extent = [](const CopyLimitArgs::Segment& s) { return ((s.rows - 1) * s.ld_words + s.row_words) * 16; };
  need("A", a.size(), extent(g.a));
  need("B", b.size(), extent(g.b));
  const uint64_t unit = g.d_vector ? 16 : 2;
  need("D", d.size(), (g.d_rows - 1) * g.d_ld_bytes + g.d_row_units * unit);

  using Word = std::array<uint32_t, 4>;
  auto load = [](std::span<const uint8_t> base, const CopyLimitArgs::Segment& s, uint64_t w) {
    const uint64_t row = w / s.row_words, col = w % s.row_words;
    uint8_t bytes[16];
    std::memcpy(bytes, base.data() + (row * s.ld_words + col) * 16, 16);
    if (s.tail_bytes < 16 && col == s.row_words - 1) std::memset(bytes + s.tail_bytes, 0, 16 - s.tail_bytes);
    Word v;
    std::memcpy(v.data(), bytes, 16);  // little-endian, as on the device
    return v;
  };
  const uint64_t threads = plan.threads();
  std::vector<Word> acc(threads, Word{0, 0, 0, 0});
  const uint64_t na = g.a.rows * g.a.row_words, nb = g.b.rows * g.b.row_words;
  for (uint64_t w = 0; w < na + nb; ++w) {
    const Word v = w < na ? load(a, g.a, w) : load(b, g.b, w - na);
    Word& x = acc[w % threads];
    for (int i = 0; i < 4; ++i) x[size_t(i)] ^= v[size_t(i)];
  }
  const uint64_t nd = g.d_rows * g.d_row_units;
  for (uint64_t u = 0; u < nd; ++u) {
    const Word& x = acc[u % threads];
    const uint64_t row = u / g.d_row_units, col = u % g.d_row_units;
    uint8_t* out = d.data() + row * g.d_ld_bytes + col * unit;
    if (g.d_vector) {
      const Word v{x[0] ^ uint32_t(u), x[1] ^ uint32_t(u >> 32), x[2] ^ kSinkMagic, x[3]};
      std::memcpy(out, v.data(), 16);
    } else {
      const uint32_t f = x[0] ^ x[1] ^ x[2] ^ x[3] ^ uint32_t(u);
      const uint16_t h = uint16_t(f ^ (f >> 16));
      std::memcpy(out, &h, 2);
    }
  }
}

}  // namespace dgt
