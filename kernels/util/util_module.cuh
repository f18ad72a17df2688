// The utility module: every helper kernel in one NVRTC compilation (extern "C" names, loaded once).
#pragma once
#include "util/clock_probe.cuh"
#include "util/compare.cuh"
#include "util/copy_limit.cuh"
#include "util/fill.cuh"
#include "util/l2_flush.cuh"
#include "reference/ref_gemm.cuh"
