#include "problem/kernel_config.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/escape.hpp"
#include "core/int_math.hpp"

namespace dgt {

const char* to_string(Raster r) { return r == Raster::kAlongM ? "m" : "n"; }
const char* to_string(Epilogue e) { return e == Epilogue::kTma ? "tma" : "direct"; }
const char* to_string(Mainloop m) {
  return m == Mainloop::kPp ? "pp" : m == Mainloop::k2o ? "2o" : m == Mainloop::k2g ? "2g" : "1g";
}

Mainloop parse_mainloop(std::string_view s, std::string_view where) {
  if (s == "1g") return Mainloop::k1g;
  if (s == "2g") return Mainloop::k2g;
  if (s == "2o") return Mainloop::k2o;
  if (s == "pp") return Mainloop::kPp;
  DGT_THROW(ErrorKind::kUsage, "{}: mainloop '{}' is unknown (expected 1g, 2g, 2o or pp)", where, escaped(s));
}

int epilogue_swizzle_bytes(int block_n, int out_bytes) {
  for (int s : {128, 64, 32})
    if ((block_n * out_bytes) % s == 0) return s;
  return 0;
}

int epilogue_box_cols(int block_n, int out_bytes) {
  const int s = epilogue_swizzle_bytes(block_n, out_bytes);
  return s ? s / out_bytes : block_n;
}

int64_t epilogue_tma_cols(int64_t n, int out_bytes) { return n * out_bytes / 16 * 16 / out_bytes; }

EpilogueStoreMap epilogue_store_map(const KernelConfig& c, int64_t n, int out_bytes) {
  EpilogueStoreMap m;
  if (c.swap_ab) {  // one m64 slice of the kernel's rows (64 columns of D, 128 bytes) by BLOCK_N rows of D
    m.cols = static_cast<uint64_t>(n);
    m.box_cols = 64, m.box_rows = static_cast<uint32_t>(c.block_n), m.swizzle = 128;
    return m;
  }
  m.cols = static_cast<uint64_t>(std::max<int64_t>(epilogue_tma_cols(n, out_bytes), 16 / out_bytes));
  m.box_cols = static_cast<uint32_t>(epilogue_box_cols(c.block_n, out_bytes));
  m.box_rows = static_cast<uint32_t>(c.rows_per_wg());
  m.swizzle = static_cast<uint32_t>(epilogue_swizzle_bytes(c.block_n, out_bytes));
  return m;
}

Epilogue parse_epilogue(std::string_view s, std::string_view where) {
  if (s == "direct") return Epilogue::kDirect;
  if (s == "tma") return Epilogue::kTma;
  DGT_THROW(ErrorKind::kUsage, "{}: epilogue '{}' is unknown (expected direct or tma)", where, escaped(s));
}

Raster parse_raster(std::string_view s, std::string_view where) {
  if (s == "m") return Raster::kAlongM;
  if (s == "n") return Raster::kAlongN;
  DGT_THROW(ErrorKind::kUsage, "{}: raster '{}' is unknown (expected m or n)", where, escaped(s));
}

std::string KernelConfig::key() const {
  return fmt::format("{}x{}x{}_s{}_wg{}_sw{}_c{}x{}_r{}{}_{}_sk{}{}_sm{}_{}_p{}", block_m, block_n, block_k, num_stages,
                     num_math_wg, swizzle, cluster_m, cluster_n, to_string(raster), group, to_string(epilogue), split_k,
                     split_cluster ? "c" : "", sms, to_string(mainloop), promote_every) +
         (swap_ab ? "_swapab" : "");
}

Problem kernel_problem(const KernelConfig& c, const Problem& p) {
  if (!c.swap_ab) return p;
  Problem t = p;
  std::swap(t.m, t.n);
  std::swap(t.a, t.b);
  std::swap(t.lda, t.ldb);
  return t;
}

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

int parse_int(std::string_view key, std::string_view token, std::string_view digits, const char* what) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty())
    DGT_THROW(ErrorKind::kUsage, "config key '{}': token '{}' should hold {} as an integer", escaped(key),
              escaped(token), what);
  return v;
}

}  // namespace

KernelConfig KernelConfig::parse_key(std::string_view key) {
  static constexpr const char* kFormat =
      "BMxBNxBK_sSTAGES_wgW_swBYTES_cCMxCN_r{m|n}GROUP_{direct|tma}_skS[c]_smSMS_{1g|2g|2o|pp}_pP[_swapab]";
  auto tok = split(key, '_');
  KernelConfig c;
  if (tok.size() >= 12 && tok.back() == "swapab") {
    c.swap_ab = true;
    tok.pop_back();
  }
  if (tok.size() < 8 || tok.size() > 11)
    DGT_THROW(ErrorKind::kUsage,
              "config key '{}' has {} '_'-separated fields, expected 11 ({}; older keys end earlier)", escaped(key),
              tok.size(), kFormat);
  auto tile = split(tok[0], 'x');
  if (tile.size() != 3)
    DGT_THROW(ErrorKind::kUsage, "config key '{}': tile '{}' should be BLOCK_MxBLOCK_NxBLOCK_K", escaped(key),
              escaped(tok[0]));
  c.block_m = parse_int(key, tok[0], tile[0], "BLOCK_M");
  c.block_n = parse_int(key, tok[0], tile[1], "BLOCK_N");
  c.block_k = parse_int(key, tok[0], tile[2], "BLOCK_K");
  auto prefixed = [&](std::string_view t, std::string_view prefix, const char* what) {
    if (t.substr(0, prefix.size()) != prefix)
      DGT_THROW(ErrorKind::kUsage, "config key '{}': token '{}' should start with '{}' ({})", escaped(key), escaped(t),
                prefix, what);
    return t.substr(prefix.size());
  };
  c.num_stages = parse_int(key, tok[1], prefixed(tok[1], "s", "kNumStages"), "kNumStages");
  c.num_math_wg = parse_int(key, tok[2], prefixed(tok[2], "wg", "consumer warpgroups"), "consumer warpgroups");
  c.swizzle = parse_int(key, tok[3], prefixed(tok[3], "sw", "swizzle bytes"), "swizzle bytes");
  auto cl = split(prefixed(tok[4], "c", "cluster shape"), 'x');
  if (cl.size() != 2)
    DGT_THROW(ErrorKind::kUsage, "config key '{}': cluster '{}' should be cMxN", escaped(key), escaped(tok[4]));
  c.cluster_m = parse_int(key, tok[4], cl[0], "cluster M");
  c.cluster_n = parse_int(key, tok[4], cl[1], "cluster N");
  auto r = prefixed(tok[5], "r", "rasterization");
  if (r.empty() || (r[0] != 'm' && r[0] != 'n'))
    DGT_THROW(ErrorKind::kUsage, "config key '{}': rasterization '{}' should be rm<group> or rn<group>", escaped(key),
              escaped(tok[5]));
  c.raster = r[0] == 'm' ? Raster::kAlongM : Raster::kAlongN;
  c.group = parse_int(key, tok[5], r.substr(1), "rasterization group");
  c.epilogue = parse_epilogue(tok[6], fmt::format("config key '{}'", escaped(key)));
  std::string_view sk = prefixed(tok[7], "sk", "split-K");
  if (!sk.empty() && sk.back() == 'c') {  // "sk<S>c": the splits reduce inside a cluster
    c.split_cluster = true;
    sk.remove_suffix(1);
  }
  c.split_k = parse_int(key, tok[7], sk, "split-K");
  if (tok.size() >= 9)
    c.sms = parse_int(key, tok[8], prefixed(tok[8], "sm", "persistent grid size"), "persistent grid size");
  // Optional trailing tokens, in this order: mainloop ("1g"/"2g"/"2o"/"pp"), promotion interval ("p<P>").
  size_t t = 9;
  if (t < tok.size() && !tok[t].empty() && (tok[t].back() == 'g' || tok[t].back() == 'o' || tok[t] == "pp")) {
    c.mainloop = parse_mainloop(tok[t], fmt::format("config key '{}'", escaped(key)));
    ++t;
  }
  if (t < tok.size() && !tok[t].empty() && tok[t][0] == 'p') {
    c.promote_every = parse_int(key, tok[t], tok[t].substr(1), "promotion interval");
    ++t;
  }
  if (t < tok.size())
    DGT_THROW(ErrorKind::kUsage,
              "config key '{}': token '{}' should be the mainloop (1g, 2g, 2o or pp) or p<promote_every> ({})",
              escaped(key), escaped(tok[t]), kFormat);
  return c;
}

std::string KernelSpec::key() const {
  std::string k = fmt::format("{}_{}.{}_{}", config.key(), to_string(a), to_string(b), to_string(accum));
  if (scale != ScaleMode::kPerTensor) k += std::string("_") + to_string(scale);
  // Output type and epilogue: tokens only when not the bf16 / no-epilogue default, so keys
  // (and cubin cache names) of the kernels that existed before stay the same.
  if (d != DType::kBF16) k += std::string("_d") + to_string(d);
  if (bias != Bias::kNone) k += "_bias";
  if (act != Act::kNone) k += std::string("_") + to_string(act);
  return k;
}

std::string KernelSpec::compiled_key() const {
  KernelSpec s = *this;
  if (!config.split_cluster) s.config.split_k = config.split_k > 1 ? 2 : 1;
  s.config.sms = 0;
  return s.key();
}

int a_box_rows(const KernelConfig& c, int64_t m) {
  if (c.cluster_n == 1 && m < c.block_m) return static_cast<int>(round_up(m, int64_t{8}));
  return c.block_m / c.cluster_n;
}

int a_tail_box_rows(const KernelConfig& c, int64_t m) {
  if (c.cluster_n == 1 && m % c.block_m != 0) return static_cast<int>(round_up(m % c.block_m, int64_t{8}));
  return c.block_m / c.cluster_n;
}

int b_box_rows(const KernelConfig& c) { return c.block_n / c.cluster_m; }

int b_tail_box_rows(const KernelConfig& c, int64_t n) {
  if (c.cluster_m == 1 && n % c.block_n != 0) return static_cast<int>(round_up(n % c.block_n, int64_t{8}));
  return b_box_rows(c);
}

void to_json(nlohmann::json& j, const KernelConfig& c) {
  j = nlohmann::json{{"key", c.key()},
                     {"block_m", c.block_m},
                     {"block_n", c.block_n},
                     {"block_k", c.block_k},
                     {"num_stages", c.num_stages},
                     {"num_math_wg", c.num_math_wg},
                     {"swizzle", c.swizzle},
                     {"cluster_m", c.cluster_m},
                     {"cluster_n", c.cluster_n},
                     {"raster", to_string(c.raster)},
                     {"group", c.group},
                     {"epilogue", to_string(c.epilogue)},
                     {"split_k", c.split_k},
                     {"split_cluster", c.split_cluster},
                     {"sms", c.sms},
                     {"mainloop", to_string(c.mainloop)},
                     {"promote_every", c.promote_every},
                     {"swap_ab", c.swap_ab}};
}

void from_json(const nlohmann::json& j, KernelConfig& c) {
  if (j.contains("key") && j.size() == 1) {
    c = KernelConfig::parse_key(j.at("key").get<std::string>());
    return;
  }
  KernelConfig d;
  c.block_m = j.value("block_m", d.block_m);
  c.block_n = j.value("block_n", d.block_n);
  c.block_k = j.value("block_k", d.block_k);
  c.num_stages = j.value("num_stages", d.num_stages);
  c.num_math_wg = j.value("num_math_wg", d.num_math_wg);
  c.swizzle = j.value("swizzle", d.swizzle);
  c.cluster_m = j.value("cluster_m", d.cluster_m);
  c.cluster_n = j.value("cluster_n", d.cluster_n);
  c.raster = parse_raster(j.value("raster", std::string("m")), "config JSON");
  c.group = j.value("group", d.group);
  c.epilogue = parse_epilogue(j.value("epilogue", std::string("direct")), "config JSON");
  c.split_k = j.value("split_k", d.split_k);
  c.split_cluster = j.value("split_cluster", d.split_cluster);
  c.sms = j.value("sms", d.sms);
  c.mainloop = parse_mainloop(j.value("mainloop", std::string(to_string(d.mainloop))), "config JSON");
  c.promote_every = j.value("promote_every", d.promote_every);
  c.swap_ab = j.value("swap_ab", d.swap_ab);
}

}  // namespace dgt
