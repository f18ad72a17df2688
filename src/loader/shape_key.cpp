#include "loader/shape_key.hpp"

#include "core/error.hpp"
#include "core/hash.hpp"

namespace dgt {

// The public Fp8Scaling names the internal ScaleMode's values one to one.
static_assert(int(Fp8Scaling::kPerTensor) == int(ScaleMode::kPerTensor) &&
              int(Fp8Scaling::kChannel) == int(ScaleMode::kChannel) &&
              int(Fp8Scaling::kBlock) == int(ScaleMode::kBlock) &&
              int(Fp8Scaling::kBlock1d1d) == int(ScaleMode::kBlock1d1d));

size_t ShapeKeyHash::operator()(const ShapeKey& s) const noexcept {
  const int64_t words[] = {s.m, s.n, s.k, s.lda, s.ldb, s.ldd, int64_t(s.flags)};
  return fnv1a64(std::string_view(reinterpret_cast<const char*>(words), sizeof words));
}

int make_flags(Fp8Format a_format, Fp8Format b_format, bool fast_accum, Fp8Scaling scale) {
  const int s = static_cast<int>(scale);
  if (s < 0 || s > static_cast<int>(Fp8Scaling::kBlock1d1d))
    DGT_THROW(ErrorKind::kUsage, "dgt::Gemm: scale = {} is not a dgt::Fp8Scaling value (0 to 3)", s);
  return int(a_format == Fp8Format::kE5M2) | int(b_format == Fp8Format::kE5M2) << 1 | int(fast_accum) << 2 | s << 3;
}

int make_flags(const GemmRunOptions& o) {
  const int out = static_cast<int>(o.output), act = static_cast<int>(o.act);
  if (out < 0 || out > static_cast<int>(OutputType::kE4M3))
    DGT_THROW(ErrorKind::kUsage, "dgt::GemmRunOptions::output = {} is not a dgt::OutputType value (0 to 2)", out);
  if (act < 0 || act > static_cast<int>(Activation::kGeluTanh))
    DGT_THROW(ErrorKind::kUsage, "dgt::GemmRunOptions::act = {} is not a dgt::Activation value (0 to 2)", act);
  return make_flags(o.a_format, o.b_format, o.fast_accum, o.scale) | out << 5 | int(o.bias != nullptr) << 7 |
         act << 8;
}

Problem make_problem(const ShapeKey& s) {
  Problem p = Problem::dense(s.m, s.n, s.k);
  p.lda = s.lda, p.ldb = s.ldb, p.ldd = s.ldd;
  p.a = (s.flags & 1) ? DType::kE5M2 : DType::kE4M3;
  p.b = (s.flags & 2) ? DType::kE5M2 : DType::kE4M3;
  p.accum = (s.flags & 4) ? Accum::kFast : Accum::kPromote;
  p.scale = static_cast<ScaleMode>((s.flags >> 3) & 3);
  const int out = (s.flags >> 5) & 3;
  p.d = out == int(OutputType::kF32) ? DType::kF32 : out == int(OutputType::kE4M3) ? DType::kE4M3 : DType::kBF16;
  p.bias = (s.flags >> 7) & 1 ? Bias::kBF16 : Bias::kNone;
  p.act = static_cast<Act>((s.flags >> 8) & 3);
  return p;
}

GemmRunOptions run_options_of(const Problem& p) {
  GemmRunOptions o;
  o.a_format = p.a == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  o.b_format = p.b == DType::kE5M2 ? Fp8Format::kE5M2 : Fp8Format::kE4M3;
  o.fast_accum = p.accum == Accum::kFast;
  o.scale = static_cast<Fp8Scaling>(p.scale);
  o.output = p.d == DType::kF32 ? OutputType::kF32 : p.d == DType::kE4M3 ? OutputType::kE4M3 : OutputType::kBF16;
  static const char kBiasMarker = 0;  // make_flags reads only whether a bias pointer is set
  o.bias = p.bias == Bias::kBF16 ? &kBiasMarker : nullptr;
  o.act = static_cast<Activation>(p.act);
  return o;
}

ShapeKey shape_key_of(const Problem& p) { return {p.m, p.n, p.k, p.lda, p.ldb, p.ldd, make_flags(run_options_of(p))}; }

}  // namespace dgt
