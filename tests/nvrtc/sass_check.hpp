// SASS checks on NVRTC cubins (CPU only): disassemble with cuobjdump and inspect the consumer mainloop.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "problem/kernel_config.hpp"

namespace dgt::test {

/// cuobjdump to use: $DGT_CUOBJDUMP, else `cuobjdump` on PATH, else the CUDA toolkit's. Empty when none
/// runs. tests/nvrtc/sass_check.sh installs one (PyPI wheel nvidia-cuda-cuobjdump) when missing.
inline std::string find_cuobjdump() {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("DGT_CUOBJDUMP"); e && *e) candidates.emplace_back(e);
  candidates.emplace_back("cuobjdump");
#ifdef DGT_CUDA_BIN_DIR
  candidates.emplace_back(std::string(DGT_CUDA_BIN_DIR) + "/cuobjdump");
#endif
  for (const auto& c : candidates)
    if (std::system(("'" + c + "' --version >/dev/null 2>&1").c_str()) == 0) return c;
  return {};
}

/// SASS text of a cubin ("cuobjdump -sass"); on failure a text that starts with "cuobjdump failed".
inline std::string disassemble(const std::string& cuobjdump, const std::string& cubin) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "dgtune-sass-XXXXXX").string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) return {};
  close(fd);
  const std::string path = tmpl + ".cubin";
  fs::rename(tmpl, path);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  }
  std::string out;
  if (FILE* p = popen(("'" + cuobjdump + "' -sass '" + path + "' 2>&1").c_str(), "r")) {
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    const int rc = pclose(p);
    if (rc != 0) out = "cuobjdump failed (status " + std::to_string(rc) + "): " + out;
  }
  fs::remove(path);
  return out;
}

/// What the mainloop check looks at. A "window" runs from a full-barrier wait (SYNCS.PHASECHK, the
/// mbarrier try_wait) to the last QGMMA issued before the next such wait; windows without a QGMMA (the
/// producer's empty-barrier waits, the retry loops) are ignored.
struct SassReport {
  int instructions = 0;
  int qgmma = 0;               ///< FP8 WGMMA instructions
  int slow_mma = 0;            ///< HMMA / plain IMMA (FP8 off the fast path)
  int local_memory = 0;        ///< LDL / STL (spills or local arrays)
  int global_loads = 0;        ///< LDG (plain global loads; TMA and bulk copies are UTMALDG / UBLKCP)
  /// LDS followed, in listing order, by an mbarrier arrive (SYNCS.ARRIVE*) with neither a WGMMA fence
  /// (WARPGROUP.ARRIVE) nor a proxy fence (FENCE.VIEW.ASYNC*) in between: a shared-memory read that the release
  /// after it does not order before the producer's next asynchronous copy into the same memory
  /// (kernels/gemm/mainloop_steps.cuh, the comment at `fetch`). An unguarded EXIT between them ends the count.
  int unfenced_shared_reads = 0;
  int windows = 0;             ///< wait..last-QGMMA windows found
  int r2ur_in_windows = 0;     ///< R2UR moves inside those windows
  int r2ur = 0;                ///< R2UR moves anywhere in the kernel (producer loop, epilogue, setup too)
  std::string first_offender;  ///< the first R2UR line inside a window
};

/// R2URs a mainloop window may hold for `c`: 2 in 1g with P > 1, else 0. 1g issues a promotion group's k-blocks one
/// ahead; ptxas keeps the phase in a vector register across the group's promotion and moves it to uniform registers
/// (two R2UR) in the group's first window, while the unrolled loop over the group's other k-blocks has none (read in
/// the SASS, 2026-12-04): once per P k-blocks, not per k-block, which is what the window check guards.
inline int allowed_window_r2ur(const dgt::KernelConfig& c) {
  return c.mainloop == dgt::Mainloop::k1g && c.promote_every > 1 ? 2 : 0;
}

/// One instruction of a cuobjdump listing: its address and its text from the opcode (or predicate guard) on.
struct SassLine {
  long addr = -1;  ///< byte offset in the function (-1 where the comment is not a hex address)
  std::string text;
};

/// The instruction lines of a listing, in order. Instruction lines look like
/// "        /*0a50*/                   QGMMA.64x128x32.F32.E4M3.E4M3 ... ;"; encoding-only lines have no ';'.
inline std::vector<SassLine> parse_sass(const std::string& sass) {
  std::vector<SassLine> out;
  std::istringstream in(sass);
  std::string line;
  while (std::getline(in, line)) {
    const size_t o = line.find("/*"), c = line.find("*/");
    if (o == std::string::npos || c == std::string::npos || c < o || line.find(';') == std::string::npos) continue;
    std::string text = line.substr(c + 2);
    const size_t b = text.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    SassLine l;
    l.text = text.substr(b);
    try {
      l.addr = std::stol(line.substr(o + 2, c - o - 2), nullptr, 16);
    } catch (...) {
    }
    out.push_back(std::move(l));
  }
  return out;
}

/// The opcode of an instruction's text without its predicate guard ("@!P0 BRA 0x5f50 ;" -> "BRA 0x5f50 ;").
inline std::string unguarded(const std::string& op) {
  return !op.empty() && op[0] == '@' ? op.substr(op.find(' ') + 1) : op;
}

inline bool opcode_is(const std::string& op, const char* name) { return unguarded(op).rfind(name, 0) == 0; }

inline SassReport analyze_sass(const std::string& sass) {
  SassReport r;
  std::vector<std::string> ops;  // instruction text of every SASS line, in order
  for (auto& l : parse_sass(sass)) ops.push_back(std::move(l.text));
  r.instructions = static_cast<int>(ops.size());
  int open_reads = 0;    // LDS since the last WGMMA or proxy fence
  long wait = -1;        // index of the current window's wait
  long last_qgmma = -1;  // last QGMMA after that wait
  auto close_window = [&]() {
    if (wait >= 0 && last_qgmma > wait) {
      ++r.windows;
      for (long i = wait; i <= last_qgmma; ++i)
        if (opcode_is(ops[i], "R2UR")) {
          if (r.first_offender.empty()) r.first_offender = ops[i];
          ++r.r2ur_in_windows;
        }
    }
    last_qgmma = -1;
  };
  for (long i = 0; i < static_cast<long>(ops.size()); ++i) {
    const std::string& op = ops[i];
    if (opcode_is(op, "QGMMA")) {
      ++r.qgmma;
      last_qgmma = i;
    }
    if (opcode_is(op, "HMMA") || opcode_is(op, "HGMMA")) ++r.slow_mma;
    if (opcode_is(op, "LDL") || opcode_is(op, "STL")) ++r.local_memory;
    if (opcode_is(op, "R2UR")) ++r.r2ur;
    if (opcode_is(op, "LDG")) ++r.global_loads;
    if (opcode_is(op, "LDS")) ++open_reads;
    if (opcode_is(op, "WARPGROUP.ARRIVE") || opcode_is(op, "FENCE.VIEW.ASYNC")) open_reads = 0;
    // An unguarded EXIT ends this thread's path: what follows in listing order is reached only by a branch,
    // typically another role (the producer after the consumers' epilogue, whose TMA-store tail reads the
    // staging tile with LDS), so reads before it are never followed by that code's releases.
    if (op.rfind("EXIT", 0) == 0) open_reads = 0;
    if (opcode_is(op, "SYNCS.ARRIVE")) {
      r.unfenced_shared_reads += open_reads;
      open_reads = 0;
    }
    if (opcode_is(op, "SYNCS.PHASECHK")) {
      close_window();
      wait = i;
    }
  }
  close_window();
  return r;
}

/// Instruction mix of the consumer's steady-state loop: the shortest loop that holds a QGMMA, i.e. a backward branch
/// and every instruction from its target to it in address order. One iteration is one k-block in 1g with P = 1, two
/// in 2g (unrolled by two, gemm/mainloop_2g.cuh). Counts are per consumer warp and iteration. Why it matters: the
/// block-scaled consumers are the bottleneck of their kernels (results/h200/block-profile-2026-12-04.md), so every
/// instruction they issue per k-block is a cost; read this before guessing (sass_diff --loop-mix prints it).
struct LoopMix {
  bool found = false;  ///< false when no backward branch encloses a QGMMA
  long first = -1, last = -1;  ///< addresses of the loop's first instruction and of its branch
  int instructions = 0;
  int qgmma = 0, ffma = 0, fadd = 0;
  int uniform = 0;  ///< uniform-datapath instructions: U* opcodes (UIADD3, UMOV, ULEA, ...) and VOTEU
  int other() const { return instructions - qgmma - ffma - fadd - uniform; }
};

inline LoopMix steady_loop_mix(const std::string& sass) {
  const std::vector<SassLine> lines = parse_sass(sass);  // in address order
  LoopMix best;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!opcode_is(lines[i].text, "BRA") || lines[i].addr < 0) continue;
    const std::string op = unguarded(lines[i].text);
    const size_t t = op.find("0x");
    if (t == std::string::npos) continue;
    long target;
    try {
      target = std::stol(op.substr(t + 2), nullptr, 16);
    } catch (...) {
      continue;
    }
    if (target >= lines[i].addr) continue;  // forward branch
    LoopMix m;
    m.first = target, m.last = lines[i].addr;
    for (size_t j = i + 1; j-- > 0 && lines[j].addr >= target;) {  // the body: back from the branch to its target
      const std::string& o = lines[j].text;
      ++m.instructions;
      if (opcode_is(o, "QGMMA")) ++m.qgmma;
      else if (opcode_is(o, "FFMA")) ++m.ffma;
      else if (opcode_is(o, "FADD")) ++m.fadd;
      else if (opcode_is(o, "U") || opcode_is(o, "VOTEU")) ++m.uniform;
    }
    if (m.qgmma == 0 || (best.found && m.instructions >= best.instructions)) continue;
    m.found = true;
    best = m;
  }
  return best;
}

/// "258 (QGMMA 8, FFMA 128, FADD 0, uniform 83, other 39)", or "no loop".
inline std::string to_string(const LoopMix& m) {
  if (!m.found) return "no loop";
  return std::to_string(m.instructions) + " (QGMMA " + std::to_string(m.qgmma) + ", FFMA " + std::to_string(m.ffma) +
         ", FADD " + std::to_string(m.fadd) + ", uniform " + std::to_string(m.uniform) + ", other " +
         std::to_string(m.other()) + ")";
}

}  // namespace dgt::test
