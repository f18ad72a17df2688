#include "core/error.hpp"

#include "core/driver_api.hpp"

#include <cuda_runtime_api.h>
#include <nvrtc.h>

namespace dgt {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage: return "usage";
    case ErrorKind::kInvalid: return "invalid";
    case ErrorKind::kCuda: return "cuda";
    case ErrorKind::kDriver: return "driver";
    case ErrorKind::kNvrtc: return "nvrtc";
    case ErrorKind::kCublas: return "cublaslt";
    case ErrorKind::kSqlite: return "sqlite";
    case ErrorKind::kIo: return "io";
    case ErrorKind::kNoDevice: return "no-device";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kInternal: return "internal";
  }
  return "unknown";
}

static std::string compose(ErrorKind kind, const std::string& message, const char* file, int line,
                           const std::string& call) {
  if (!file || !*file) return message;
  std::string where = fmt::format("{} at {}:{}", to_string(kind), file, line);
  if (!call.empty()) where += ": " + call;
  return message + " [" + where + "]";
}

Error::Error(ErrorKind kind, std::string message, const char* file, int line, std::string call)
    : std::runtime_error(compose(kind, message, file, line, call)),
      kind_(kind),
      message_(std::move(message)),
      file_(file ? file : ""),
      line_(line),
      call_(std::move(call)) {}

bool is_sticky_cuda_error(int code) {
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown: return true;
    default: return false;
  }
}

void throw_cuda(int code, const char* call, const char* file, int line) {
  auto err = static_cast<cudaError_t>(code);
  throw Error(ErrorKind::kCuda,
              fmt::format("CUDA error {} ({}): {}", code, cudaGetErrorName(err), cudaGetErrorString(err)), file, line,
              call);
}

void throw_driver(int code, const char* call, const char* file, int line) {
  throw Error(ErrorKind::kDriver, fmt::format("CUDA driver error {} ({})", code, driver_error_name(code)), file, line,
              call);
}

void throw_nvrtc(int code, const char* call, const char* file, int line) {
  throw Error(ErrorKind::kNvrtc,
              fmt::format("NVRTC error {}: {}", code, nvrtcGetErrorString(static_cast<nvrtcResult>(code))), file, line,
              call);
}

void throw_cublas(int code, const char* call, const char* file, int line) {
  throw Error(ErrorKind::kCublas, fmt::format("cuBLASLt status {}", code), file, line, call);
}

}  // namespace dgt
