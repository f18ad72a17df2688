// The worker process's wire format (src/worker/): one JSON object per line on a pipe, one reply per
// request. Parent -> worker (the worker's stdin):
//   {"op":"begin_shape","problem":{...}}   -> {"ok":true}
//   {"op":"begin_shape","problem":{...},"grouped":"kind=... groups=G m_per_group=LIST N K ..."} -> {"ok":true}
//                                           (a grouped shape: grouped_text() with the counts as a list)
//   {"op":"baselines"}                     -> {"ok":true,"default":BaselineRecord,"tuned":BaselineRecord}
//   {"op":"measure","problem":{...},"config":{...}} -> {"ok":true,"trial":TrialRecord,"context_lost":bool}
//   {"op":"quit"}                          -> the worker exits 0
// Worker -> parent (fd 3), first line after start: {"ok":true,"hello":{"fingerprint":{...}}}.
// A request the worker could not serve: {"ok":false,"error":"...","kind":"cuda"|...}. A worker whose
// CUDA context is lost (context_lost) exits after its reply.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "records/records.hpp"
#include "tune/session_options.hpp"

namespace dgt {

void to_json(nlohmann::json& j, const Timing& t);
void from_json(const nlohmann::json& j, Timing& t);
void to_json(nlohmann::json& j, const Verification& v);
void from_json(const nlohmann::json& j, Verification& v);
/// Every field of the record, status as its to_string() text; exact round trip (doubles as JSON numbers).
void to_json(nlohmann::json& j, const TrialRecord& t);
void from_json(const nlohmann::json& j, TrialRecord& t);
void to_json(nlohmann::json& j, const BaselineRecord& b);
void from_json(const nlohmann::json& j, BaselineRecord& b);
void to_json(nlohmann::json& j, const DeviceFingerprint& f);
void from_json(const nlohmann::json& j, DeviceFingerprint& f);
/// The fields a worker measures with: device, cache_dir, kind, protocol, hot_graph_rounds, seed (not
/// db_path: workers never open the DB; not compile_threads: the parent compiles).
void to_json(nlohmann::json& j, const SessionOptions& o);
void from_json(const nlohmann::json& j, SessionOptions& o);

/// ErrorKind <-> its wire name ("usage", "cuda", ...), so a worker's error is rethrown in the parent with
/// the same exit code.
std::string error_kind_name(ErrorKind k);
ErrorKind parse_error_kind(const std::string& name);

/// Writes `j` as one line to `fd`, all of it (retrying short writes and EINTR). Throws Error(kIo) when the
/// reader is gone (EPIPE: SIGPIPE must be ignored by the caller) or the write fails.
void write_message(int fd, const nlohmann::json& j);

/// Reads newline-terminated JSON messages from a file descriptor, with a deadline.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  enum class Result { kMessage, kEof, kTimeout };
  /// Waits up to `limit` for one line; kMessage stores it in *out (Error(kInternal) naming the text when it
  /// is not JSON), kEof when the writer closed the pipe (the worker ended), kTimeout when the limit passed.
  Result read(nlohmann::json* out, std::chrono::milliseconds limit);

 private:
  int fd_;
  std::string buffer_;
};

}  // namespace dgt
