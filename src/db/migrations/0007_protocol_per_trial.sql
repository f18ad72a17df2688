-- Schema version 7 (`dgtune sweep --protocol`): trials, baselines and sweep states are kept per
-- measurement protocol, so one candidate can be stored timed under cold-l2 and under hot-graph, and the
-- winner view has one winner per (device, environment, problem, protocol name). trial, baseline and sweep
-- gain protocol_name ("cold-l2-v1", "hot-graph-v1": MeasureProtocol::name(), the "name" of the protocol
-- JSON) in their UNIQUE key; SQLite changes a UNIQUE constraint only by rebuilding the table. Existing
-- trials and baselines take the name from their protocol JSON; rows whose JSON names none (and every sweep
-- state) were measured by the sweep Timer, 'cold-l2-v1'. Row ids are kept.
DROP VIEW winner;
DROP INDEX trial_by_device_problem;
ALTER TABLE trial RENAME TO trial_v6;
ALTER TABLE baseline RENAME TO baseline_v6;
ALTER TABLE sweep RENAME TO sweep_v6;
CREATE TABLE trial (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  config_id INTEGER NOT NULL REFERENCES config (id),
  pci_bus_id TEXT NOT NULL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  compile_ms REAL,
  registers INTEGER NOT NULL, spill_bytes INTEGER NOT NULL, smem_bytes INTEGER NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, config_id, protocol_name)
);
CREATE INDEX trial_by_device_problem ON trial (device_id, problem_id);
CREATE TABLE baseline (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  provider TEXT NOT NULL,
  pci_bus_id TEXT NOT NULL,
  status TEXT NOT NULL,
  cublas_status INTEGER NOT NULL,
  error TEXT NOT NULL,
  algo TEXT NOT NULL,
  median_us REAL, p10_us REAL, p90_us REAL, samples INTEGER, rse REAL,
  tflops REAL, gbps REAL,
  verify_ok INTEGER, max_rel_err REAL, diff REAL, nan_count INTEGER, pad_touched INTEGER,
  sm_clock_mhz REAL, throttled INTEGER,
  protocol TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, provider, protocol_name)
);
CREATE TABLE sweep (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  environment_id INTEGER NOT NULL REFERENCES environment (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  space TEXT NOT NULL,
  strategy TEXT NOT NULL,
  protocol_name TEXT NOT NULL,
  candidates INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (device_id, environment_id, problem_id, space, strategy, protocol_name)
);
CREATE VIEW winner AS
SELECT trial_id, device_id, environment_id, problem_id, config_id, protocol_name, problem_key, config_key, kernel_hash,
       median_us, tflops
FROM (
  SELECT t.id AS trial_id, t.device_id AS device_id, t.environment_id AS environment_id, t.problem_id AS problem_id,
         t.config_id AS config_id, t.protocol_name AS protocol_name, p.key AS problem_key, c.key AS config_key,
         e.kernel_hash AS kernel_hash, t.median_us AS median_us, t.tflops AS tflops,
         row_number() OVER (PARTITION BY t.device_id, t.environment_id, t.problem_id, t.protocol_name
                            ORDER BY t.median_us ASC, c.key ASC) AS rank
  FROM trial t
  JOIN problem p ON p.id = t.problem_id
  JOIN config c ON c.id = t.config_id
  JOIN environment e ON e.id = t.environment_id
  WHERE t.status = 'ok' AND t.median_us IS NOT NULL
)
WHERE rank = 1;

-- The protocol name of a stored JSON text; the same expression as TuningDb's inserts (db/tuning_db.cpp).
INSERT INTO trial (id, device_id, environment_id, problem_id, config_id, pci_bus_id, status, error, compile_ms,
                   registers, spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok,
                   max_rel_err, diff, nan_count, pad_touched, sm_clock_mhz, throttled, protocol, protocol_name,
                   created_at)
SELECT id, device_id, environment_id, problem_id, config_id, pci_bus_id, status, error, compile_ms, registers,
       spill_bytes, smem_bytes, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff,
       nan_count, pad_touched, sm_clock_mhz, throttled, protocol,
       CASE WHEN NOT json_valid(protocol) THEN 'cold-l2-v1' WHEN json_type(protocol, '$.name') = 'text'
            THEN json_extract(protocol, '$.name') ELSE 'cold-l2-v1' END,
       created_at
FROM trial_v6 ORDER BY id;
INSERT INTO baseline (id, device_id, environment_id, problem_id, provider, pci_bus_id, status, cublas_status, error,
                      algo, median_us, p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff,
                      nan_count, pad_touched, sm_clock_mhz, throttled, protocol, protocol_name, created_at)
SELECT id, device_id, environment_id, problem_id, provider, pci_bus_id, status, cublas_status, error, algo, median_us,
       p10_us, p90_us, samples, rse, tflops, gbps, verify_ok, max_rel_err, diff, nan_count, pad_touched, sm_clock_mhz,
       throttled, protocol,
       CASE WHEN NOT json_valid(protocol) THEN 'cold-l2-v1' WHEN json_type(protocol, '$.name') = 'text'
            THEN json_extract(protocol, '$.name') ELSE 'cold-l2-v1' END,
       created_at
FROM baseline_v6 ORDER BY id;
INSERT INTO sweep (id, device_id, environment_id, problem_id, space, strategy, protocol_name, candidates, stored,
                   complete, updated_at)
SELECT id, device_id, environment_id, problem_id, space, strategy, 'cold-l2-v1', candidates, stored, complete, updated_at
FROM sweep_v6 ORDER BY id;

DROP TABLE trial_v6;
DROP TABLE baseline_v6;
DROP TABLE sweep_v6;
