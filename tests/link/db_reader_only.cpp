// dgtune_db_reader_only DB: the tuning DB's reader linked alone. This program is built from the sources of
// core/, problem/, records/ and the reader's files of db/ only (tests/CMakeLists.txt), never from the writer
// (db/tuning_db.cpp), the schema text and migrations (db/schema.cpp, the embedded SQL) or any module above db:
// a reader that needs one of them fails to link, which is the guarantee the run-time library (loader + reader,
// no tuner) relies on. It prints every device of DB and its winners (TuningDbReader::devices and export_rows),
// one line each; exit 2 with the error on stderr when the reader refuses the file. A unit test runs it on a DB
// the writer made (TuningDbTest.ReaderLinkedAloneReadsWhatTheWriterStored).
#include <cstdio>
#include <exception>
#include <string>

#include "core/error.hpp"
#include "db/tuning_db_reader.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DB\n", argv[0]);
    return 2;
  }
  try {
    const dgt::TuningDbReader db(argv[1]);
    for (const dgt::DeviceRow& d : db.devices()) {
      std::printf("device %lld %s %s winners %lld\n", static_cast<long long>(d.id), d.hw_key.c_str(), d.name.c_str(),
                  static_cast<long long>(d.winners));
      for (const dgt::ExportRow& r : db.export_rows(d.id))
        std::printf("winner %s %s %s %.3f\n", r.trial.problem.key().c_str(), r.trial.config.key().c_str(),
                    r.protocol_name.c_str(), r.trial.timing ? r.trial.timing->median_us : -1.0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
