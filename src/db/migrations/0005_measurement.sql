-- Schema version 5: interleaved measurements (bench/rounds.hpp) with every sample, for `dgtune compare
-- --save` and `dgtune compare --between`. measurement: one run of the engine for one problem under one
-- protocol (name and JSON), the reference clock and the flag floor; measurement_side: side index, label,
-- kind (config | provider), the config key or cuBLASLt algo text, where the config came from (db |
-- nearest | default) or the provider name, the heuristic's algorithm count, the output check after
-- replay (NULL when not run); measurement_sample: side, round, position in the round, time, SM clock,
-- flagged (clock below the floor).
CREATE TABLE measurement (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  pci_bus_id TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  protocol TEXT NOT NULL,
  rounds INTEGER NOT NULL,
  reference_clock_mhz REAL NOT NULL,
  clock_floor_mhz REAL NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX measurement_by_device_problem ON measurement (device_id, problem_id);
CREATE TABLE measurement_side (
  measurement_id INTEGER NOT NULL REFERENCES measurement (id),
  side INTEGER NOT NULL,
  label TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('config', 'provider')),
  config_key TEXT NOT NULL,
  algo TEXT NOT NULL,
  source TEXT NOT NULL,
  heuristic_count INTEGER NOT NULL,
  check_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  PRIMARY KEY (measurement_id, side)
);
CREATE TABLE measurement_sample (
  measurement_id INTEGER NOT NULL,
  side INTEGER NOT NULL,
  round INTEGER NOT NULL,
  position INTEGER NOT NULL,
  time_us REAL NOT NULL,
  sm_clock_mhz REAL NOT NULL,
  flagged INTEGER NOT NULL,
  PRIMARY KEY (measurement_id, side, round),
  FOREIGN KEY (measurement_id, side) REFERENCES measurement_side (measurement_id, side)
);
