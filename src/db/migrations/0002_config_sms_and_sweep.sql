-- Schema version 2 (dgtune 0.2): the persistent grid size becomes a config column, and per-sweep progress is
-- recorded so that a sweep stopped by its time budget is marked incomplete and continued later.
ALTER TABLE config ADD COLUMN sms INTEGER NOT NULL DEFAULT 0;
CREATE TABLE sweep (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES device (id),
  problem_id INTEGER NOT NULL REFERENCES problem (id),
  space TEXT NOT NULL,
  strategy TEXT NOT NULL,
  candidates INTEGER NOT NULL,
  stored INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (device_id, problem_id, space, strategy)
);
