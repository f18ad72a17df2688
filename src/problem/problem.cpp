#include "problem/problem.hpp"

#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/int_math.hpp"

namespace dgt {

const char* to_string(DType t) {
  switch (t) {
    case DType::kE4M3: return "e4m3";
    case DType::kE5M2: return "e5m2";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
  }
  return "?";
}
const char* to_string(Accum a) { return a == Accum::kPromote ? "promote" : "fast"; }
const char* to_string(ScaleMode s) {
  switch (s) {
    case ScaleMode::kPerTensor: return "per-tensor";
    case ScaleMode::kChannel: return "channel";
    case ScaleMode::kBlock: return "block";
    case ScaleMode::kBlock1d1d: return "block1d1d";
  }
  return "?";
}

const char* to_string(Bias b) { return b == Bias::kBF16 ? "bf16" : "none"; }
const char* to_string(Act a) {
  switch (a) {
    case Act::kNone: return "none";
    case Act::kRelu: return "relu";
    case Act::kGeluTanh: return "gelu_tanh";
  }
  return "?";
}

Bias parse_bias(std::string_view s) {
  if (s == "none") return Bias::kNone;
  if (s == "bf16") return Bias::kBF16;
  DGT_THROW(ErrorKind::kUsage, "unknown bias '{}' (expected none or bf16)", s);
}

Act parse_act(std::string_view s) {
  if (s == "none") return Act::kNone;
  if (s == "relu") return Act::kRelu;
  if (s == "gelu_tanh") return Act::kGeluTanh;
  DGT_THROW(ErrorKind::kUsage, "unknown activation '{}' (expected none, relu or gelu_tanh)", s);
}

DType parse_output_dtype(std::string_view s) {
  if (s == "bf16") return DType::kBF16;
  if (s == "f32") return DType::kF32;
  if (s == "e4m3") return DType::kE4M3;
  DGT_THROW(ErrorKind::kUsage, "unknown output type '{}' (expected bf16, f32 or e4m3)", s);
}

ScaleMode parse_scale_mode(std::string_view s) {
  if (s == "tensor" || s == "per-tensor") return ScaleMode::kPerTensor;
  if (s == "channel") return ScaleMode::kChannel;
  if (s == "block") return ScaleMode::kBlock;
  if (s == "block1d1d") return ScaleMode::kBlock1d1d;
  DGT_THROW(ErrorKind::kUsage, "unknown scale mode '{}' (expected tensor, channel, block or block1d1d)", s);
}

namespace {
const char* scale_token(ScaleMode s) {
  switch (s) {
    case ScaleMode::kPerTensor: return "pt";
    case ScaleMode::kChannel: return "ch";
    case ScaleMode::kBlock: return "blk";
    case ScaleMode::kBlock1d1d: return "blk1d1d";
  }
  return "?";
}
}  // namespace

DType parse_dtype(std::string_view s) {
  if (s == "e4m3") return DType::kE4M3;
  if (s == "e5m2") return DType::kE5M2;
  if (s == "bf16") return DType::kBF16;
  if (s == "f32") return DType::kF32;
  DGT_THROW(ErrorKind::kUsage, "unknown dtype '{}' (expected e4m3, e5m2, bf16 or f32)", s);
}

Accum parse_accum(std::string_view s) {
  if (s == "promote") return Accum::kPromote;
  if (s == "fast") return Accum::kFast;
  DGT_THROW(ErrorKind::kUsage, "unknown accumulation mode '{}' (expected promote or fast)", s);
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kE4M3:
    case DType::kE5M2: return 1;
    case DType::kBF16: return 2;
    case DType::kF32: return 4;
  }
  return 0;
}

Problem Problem::dense(int64_t m, int64_t n, int64_t k) {
  Problem p;
  p.m = m, p.n = n, p.k = k;
  p.lda = k, p.ldb = k, p.ldd = n;
  return p;
}

std::string Problem::key() const {
  std::string s = fmt::format("{}x{}x{}_lda{}_ldb{}_ldd{}_{}.{}.{}_{}_{}", m, n, k, lda, ldb, ldd, to_string(a),
                              to_string(b), to_string(d), scale_token(scale), to_string(accum));
  // Epilogue tokens only when present: keys of problems without one are unchanged since fused epilogues were added.
  if (bias != Bias::kNone) s += "_bias";
  if (act != Act::kNone) s += fmt::format("_{}", to_string(act));
  if (groups <= 0) return s;
  // Grouped: a prefix that starts with a letter (a dense key starts with M's digits), then the dense view's key.
  if (group_kind == GroupKind::kMasked)
    return fmt::format("grouped-masked_G{}_mmax{}_em{}_{}", groups, m_max, expected_m, s);
  return fmt::format("grouped-contiguous_G{}_{}", groups, s);
}

std::string Problem::label() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (lda != k || ldb != k || ldd != n) s += fmt::format(" ld={},{},{}", lda, ldb, ldd);
  if (a != DType::kE4M3 || b != DType::kE4M3) s += fmt::format(" {}x{}", to_string(a), to_string(b));
  if (d != DType::kBF16) s += fmt::format(" ->{}", to_string(d));
  if (scale != ScaleMode::kPerTensor) s += fmt::format(" {}", to_string(scale));
  if (accum != Accum::kPromote) s += fmt::format(" {}", to_string(accum));
  if (bias != Bias::kNone) s += " +bias";
  if (act != Act::kNone) s += fmt::format(" {}", to_string(act));
  if (groups > 0) {
    s = fmt::format("{} G{} {}", group_kind == GroupKind::kMasked ? "masked" : "contiguous", groups, s);
    if (group_kind == GroupKind::kMasked) s += fmt::format(" mmax={} em={}", m_max, expected_m);
  }
  return s;
}

ScaleLayout Problem::scales() const {
  ScaleLayout l;
  const int64_t granules = ceil_div(k, kScaleBlock);
  switch (scale) {
    case ScaleMode::kPerTensor: break;
    case ScaleMode::kChannel:
      l.a_elems = m;
      l.b_elems = n;
      break;
    case ScaleMode::kBlock:
      l.ld_a = round_up(m, 4);
      l.a_elems = granules * l.ld_a;
      l.ld_b = round_up(granules, 4);
      l.b_elems = ceil_div(n, kScaleBlock) * l.ld_b;
      break;
    case ScaleMode::kBlock1d1d:
      l.ld_a = round_up(m, 4);
      l.a_elems = granules * l.ld_a;
      l.ld_b = round_up(n, 4);
      l.b_elems = granules * l.ld_b;
      break;
  }
  return l;
}

double Problem::flops() const { return 2.0 * double(m) * double(n) * double(k); }

double Problem::min_bytes() const {
  return double(m) * k * dtype_bytes(a) + double(n) * k * dtype_bytes(b) + double(m) * n * dtype_bytes(d) +
         (bias == Bias::kBF16 ? double(n) * 2 : 0.0);
}

void validate_problem(const Problem& p) {
  constexpr int64_t kMaxDim = (int64_t(1) << 31) - 1;
  constexpr int64_t kMaxStride = int64_t(1) << 40;
  auto dim = [&](const char* name, int64_t v) {
    if (v < 1) DGT_THROW(ErrorKind::kInvalid, "{} = {} is invalid: every dimension must be >= 1", name, v);
    if (v > kMaxDim) DGT_THROW(ErrorKind::kInvalid, "{} = {} is too large: dimensions must be < 2^31", name, v);
  };
  dim("M", p.m);
  dim("N", p.n);
  dim("K", p.k);
  if (p.a != DType::kE4M3 && p.a != DType::kE5M2)
    DGT_THROW(ErrorKind::kInvalid, "operand A has dtype {}: A must be e4m3 or e5m2", to_string(p.a));
  if (p.b != DType::kE4M3 && p.b != DType::kE5M2)
    DGT_THROW(ErrorKind::kInvalid, "operand B has dtype {}: B must be e4m3 or e5m2", to_string(p.b));
  if (p.d != DType::kBF16 && p.d != DType::kF32 && p.d != DType::kE4M3)
    DGT_THROW(ErrorKind::kInvalid, "operand D has dtype {}: the output type must be bf16, f32 or e4m3",
              to_string(p.d));
  // No buffer of 2^48 bytes (256 TiB) exists on any GPU; the bound keeps every size product inside int64.
  constexpr double kMaxOperandBytes = double(int64_t(1) << 48);
  auto operand = [&](const char* op, const char* ld_name, int64_t ld, int64_t min_ld, const char* min_name,
                     int elem_bytes, bool tma, int64_t rows) {
    if (ld < min_ld)
      DGT_THROW(ErrorKind::kInvalid, "operand {}: {} = {} is smaller than {} = {} (rows would overlap)", op, ld_name,
                ld, min_name, min_ld);
    // Before any integer product (ld x bytes wrapped for ld near 2^63): A and B are read through tensor maps.
    if (tma && ld >= kMaxStride / elem_bytes)
      DGT_THROW(ErrorKind::kInvalid,
                "operand {}: {} = {} elements is too large (TMA rule: global strides must be < 2^40 bytes)", op,
                ld_name, ld);
    // In doubles, so it cannot wrap; it also bounds D's ldd (no TMA rule: the direct epilogue; the TMA-store one's
    // stride rule is the config rule P3).
    if (double(rows) * double(ld) * elem_bytes >= kMaxOperandBytes)
      DGT_THROW(ErrorKind::kInvalid,
                "operand {}: {} rows of {} = {} elements ({} bytes each) is too large: an operand must be < 2^48 bytes",
                op, rows, ld_name, ld, elem_bytes);
    int64_t stride_bytes = ld * elem_bytes;
    if (tma && stride_bytes % 16 != 0)
      DGT_THROW(ErrorKind::kInvalid,
                "operand {}: {} = {} elements = {} bytes is not a multiple of 16 bytes (TMA rule: every global stride "
                "of a tensor map must be a multiple of 16 bytes); pad the rows, e.g. {} = {}",
                op, ld_name, ld, stride_bytes, ld_name, round_up(stride_bytes, 16) / elem_bytes);
  };
  if (is_block_scaled(p.scale) && p.accum != Accum::kPromote)
    DGT_THROW(ErrorKind::kInvalid,
              "scale mode {} needs accum = promote: block scales are applied when each 128-wide k granule's "
              "tensor-core partial sum is promoted to FP32, which fast accumulation skips",
              to_string(p.scale));
  operand("A", "lda", p.lda, p.k, "K", dtype_bytes(p.a), true, p.m);
  operand("B", "ldb", p.ldb, p.k, "K", dtype_bytes(p.b), true, p.groups > 0 ? int64_t(p.groups) * p.n : p.n);
  operand("D", "ldd", p.ldd, p.n, "N", dtype_bytes(p.d), false, p.m);
}

void to_json(nlohmann::json& j, const Problem& p) {
  j = nlohmann::json{{"m", p.m},
                     {"n", p.n},
                     {"k", p.k},
                     {"lda", p.lda},
                     {"ldb", p.ldb},
                     {"ldd", p.ldd},
                     {"dtype_a", to_string(p.a)},
                     {"dtype_b", to_string(p.b)},
                     {"dtype_d", to_string(p.d)},
                     {"scale", to_string(p.scale)},
                     {"accum", to_string(p.accum)},
                     {"bias", to_string(p.bias)},
                     {"act", to_string(p.act)}};
  // Grouped fields only for grouped problems: a dense problem's JSON is the one written before they existed.
  if (p.groups > 0) {
    j["groups"] = p.groups;
    j["group_kind"] = p.group_kind == GroupKind::kMasked ? "masked" : "contiguous";
    j["m_max"] = p.m_max;
    j["expected_m"] = p.expected_m;
  }
}

namespace {

/// Integer field `name` of a problem JSON: a JSON integer within int64 (nlohmann's get<int64_t> would truncate
/// 4096.5 to 4096 and wrap 1e20 or 2^64 - 1); absent: `fallback`, or Error(kInvalid) when `fallback` is empty.
int64_t integer_field(const nlohmann::json& j, const char* name, std::optional<int64_t> fallback) {
  if (!j.contains(name)) {
    if (fallback) return *fallback;
    DGT_THROW(ErrorKind::kInvalid, "missing field '{}'", name);
  }
  const nlohmann::json& v = j.at(name);
  const bool fits = v.is_number_integer() &&
                    (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()));
  if (!fits) DGT_THROW(ErrorKind::kInvalid, "field '{}' = {} is not an integer in the int64 range", name, v.dump());
  return v.get<int64_t>();
}

}  // namespace

void from_json(const nlohmann::json& j, Problem& p) {
  p = Problem::dense(integer_field(j, "m", {}), integer_field(j, "n", {}), integer_field(j, "k", {}));
  p.lda = integer_field(j, "lda", p.lda);
  p.ldb = integer_field(j, "ldb", p.ldb);
  p.ldd = integer_field(j, "ldd", p.ldd);
  p.a = parse_dtype(j.value("dtype_a", std::string("e4m3")));
  p.b = parse_dtype(j.value("dtype_b", std::string("e4m3")));
  p.d = parse_dtype(j.value("dtype_d", std::string("bf16")));
  p.scale = parse_scale_mode(j.value("scale", std::string("per-tensor")));
  p.accum = parse_accum(j.value("accum", std::string("promote")));
  p.bias = parse_bias(j.value("bias", std::string("none")));
  p.act = parse_act(j.value("act", std::string("none")));
  const int64_t groups = integer_field(j, "groups", 0);
  if (groups < 0 || groups > std::numeric_limits<int>::max())
    DGT_THROW(ErrorKind::kInvalid, "field 'groups' = {} is outside 0..2^31-1", groups);
  p.groups = int(groups);
  if (p.groups > 0) {
    const std::string kind = j.value("group_kind", std::string("contiguous"));
    if (kind != "contiguous" && kind != "masked")
      DGT_THROW(ErrorKind::kUsage, "problem JSON: group_kind '{}' is not contiguous or masked", escaped(kind));
    p.group_kind = kind == "masked" ? GroupKind::kMasked : GroupKind::kContiguous;
    p.m_max = integer_field(j, "m_max", 0);
    p.expected_m = integer_field(j, "expected_m", 0);
  }
}

}  // namespace dgt
