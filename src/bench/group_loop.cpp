#include "bench/group_loop.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/int_math.hpp"

namespace dgt {

namespace {

/// The dense problem cuBLASLt runs for one group of `rows` rows.
Problem group_problem(const GroupedProblem& g, int64_t rows) {
  Problem p = Problem::dense(rows, g.n, g.k);
  p.scale = g.scale;
  p.accum = g.accum;
  return p;
}

}  // namespace

CublasLtGroupLoop::CublasLtGroupLoop(const GroupedProblem& g, const jit::GroupedOperands& ops, cudaStream_t s) {
  const std::vector<int64_t> starts = g.group_starts();
  const int64_t granules = ceil_div(g.k, kScaleBlock);
  const bool block = g.scale == ScaleMode::kBlock;
  // A's scales in the grouped layout: contiguous [granules][M_sum]; masked [G][granules][M_max].
  const int64_t a_ld = g.kind == GroupKind::kContiguous ? g.total_rows() : g.m_max;
  // The rows a group may be run with when cuBLASLt refuses its real count: its segment (contiguous) or M_max.
  auto room = [&](int gi) {
    return g.kind == GroupKind::kContiguous ? round_up(g.rows[size_t(gi)], kGroupRowAlign) : g.m_max;
  };
  size_t workspace = 0;
  for (int gi = 0; gi < g.groups; ++gi) {
    const int64_t m = g.rows[size_t(gi)];
    if (m == 0) continue;
    std::string why;
    int64_t run_rows = m;
    std::unique_ptr<CublasLtGemm> gemm = CublasLtGemm::heuristic(handle_.get(), group_problem(g, m), why);
    if (!gemm && round_up(m, int64_t(16)) <= room(gi)) {
      run_rows = round_up(m, int64_t(16));
      std::string why_padded;
      gemm = CublasLtGemm::heuristic(handle_.get(), group_problem(g, run_rows), why_padded);
      if (gemm) ++padded_;
    }
    if (!gemm)
      DGT_THROW(ErrorKind::kCublas, "per-group cuBLASLt baseline: group {} ({} rows, N {}, K {}, {} scales): {}", gi, m,
                g.n, g.k, to_string(g.scale), why);
    Group grp;
    const Problem p = group_problem(g, run_rows);
    const int64_t row0 = starts[size_t(gi)];
    grp.ops.a = static_cast<const uint8_t*>(ops.a) + row0 * g.k;
    grp.ops.b = static_cast<const uint8_t*>(ops.b) + int64_t(gi) * g.n * g.k;
    grp.ops.d = static_cast<uint16_t*>(ops.d) + row0 * g.n;
    grp.ops.scale_a = ops.scale_a;
    grp.ops.scale_b = ops.scale_b;
    if (block) {
      const ScaleLayout sl = p.scales();
      grp.scale_a = DeviceBuffer(static_cast<size_t>(sl.a_elems) * 4);
      DGT_CHECK_CUDA(cudaMemsetAsync(grp.scale_a.get(), 0, static_cast<size_t>(sl.a_elems) * 4, s));
      const float* src = g.kind == GroupKind::kContiguous ? ops.scale_a + row0
                                                          : ops.scale_a + int64_t(gi) * granules * g.m_max;
      // granules rows of run_rows floats (real rows, then the padding rows' scales as the layout holds them).
      DGT_CHECK_CUDA(cudaMemcpy2DAsync(grp.scale_a.get(), static_cast<size_t>(sl.ld_a) * 4, src,
                                       static_cast<size_t>(a_ld) * 4, static_cast<size_t>(run_rows) * 4,
                                       static_cast<size_t>(granules), cudaMemcpyDeviceToDevice, s));
      grp.ops.scale_a = grp.scale_a.as<float>();
      grp.ops.scale_b = ops.scale_b + int64_t(gi) * ceil_div(g.n, kScaleBlock) * sl.ld_b;
    }
    workspace = std::max(workspace, gemm->workspace_bytes());
    grp.gemm = std::move(gemm);
    groups_.push_back(std::move(grp));
  }
  if (workspace > 0) {
    workspace_ = DeviceBuffer(workspace);
    for (Group& grp : groups_) grp.gemm->bind_workspace(workspace_.get(), workspace);
  }
  DGT_CHECK_CUDA(cudaStreamSynchronize(s));
}

CublasLtGroupLoop::~CublasLtGroupLoop() {
  if (graph_) cudaGraphExecDestroy(graph_);
}

void CublasLtGroupLoop::enqueue(cudaStream_t s) const {
  for (const Group& grp : groups_) grp.gemm->launch(grp.ops, s);
}

void CublasLtGroupLoop::build_graph() {
  // Captured on a private stream, so that capturing never touches a stream the engine has work queued on.
  const cudaStream_t capture = capture_stream_.get();
  cudaGraph_t graph = nullptr;
  DGT_CHECK_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(capture);
  } catch (...) {
    cudaStreamEndCapture(capture, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  DGT_CHECK_CUDA(cudaStreamEndCapture(capture, &graph));
  const cudaError_t e = cudaGraphInstantiate(&graph_, graph, 0);
  cudaGraphDestroy(graph);
  DGT_CHECK_CUDA(e);
}

Side CublasLtGroupLoop::side(const std::string& label) {
  if (!graph_) build_graph();
  return Side{label, [this](cudaStream_t s) {
                cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
                DGT_CHECK_CUDA(cudaStreamIsCapturing(s, &status));
                if (status == cudaStreamCaptureStatusActive) {
                  enqueue(s);  // hot-graph: the engine's own capture
                } else {
                  DGT_CHECK_CUDA(cudaGraphLaunch(graph_, s));
                }
              }};
}

std::string CublasLtGroupLoop::describe() const {
  std::map<std::string, int> algos;
  for (const Group& grp : groups_) ++algos[grp.gemm->description()];
  std::string s = fmt::format("{} calls", groups_.size());
  if (padded_ > 0) s += fmt::format(" ({} with the count rounded up to a multiple of 16)", padded_);
  s += "; algorithms:";
  for (const auto& [d, n] : algos) s += fmt::format(" [{}] x{}", d, n);
  return s;
}

}  // namespace dgt
